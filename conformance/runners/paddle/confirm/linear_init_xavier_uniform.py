"""linear-init-xavier-uniform

paddle.nn.Linear built without weight_attr initializes its weight "with Xavier": XavierUniform, U(-b, b),
b = sqrt(6 / (fan_in + fan_out)). For Linear(256, 64): standard deviation sqrt(2 / 320) = 0.079; torch's
nn.Linear(256, 64) draws U(-1/16, 1/16), standard deviation 0.036.

Upstream: https://paddlepaddle.org.cn/documentation/docs/en/api/paddle/nn/Linear_en.html
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.seed(0)


def stats(w):
    """(std, max |w| / std): about 1.73 for a uniform draw, past 3 for a normal one of this size."""
    w = np.asarray(w, dtype=np.float64)
    return w.std(), np.abs(w).max() / w.std()


def test_linear_weight_is_xavier_uniform():
    std, spread = stats(paddle.nn.Linear(256, 64).weight.numpy())
    print(f"Linear(256, 64): weight std {std:.4f} (xavier {np.sqrt(2 / 320):.4f}, torch {1 / np.sqrt(768):.4f}), max/std {spread:.2f}")
    assert abs(std / np.sqrt(2 / 320) - 1) < 0.05 and spread < 1.8


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_linear_weight_is_xavier_uniform()
    print("confirmed: linear-init-xavier-uniform")
