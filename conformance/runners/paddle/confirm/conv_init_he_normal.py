"""conv-init-he-normal

paddle.nn.Conv2D built without weight_attr initializes its weight with Normal(0.0, std), std = (2.0 /
filter_elem_num) ** 0.5, filter_elem_num = in channels x kernel area (He normal, not truncated). For
Conv2D(16, 8, 3): standard deviation sqrt(2 / 144) = 0.118; torch's nn.Conv2d(16, 8, 3) draws U(-1/12,
1/12), standard deviation 0.048.

Upstream: https://paddlepaddle.org.cn/documentation/docs/en/api/paddle/nn/Conv2D_en.html
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


def test_conv_weight_is_he_normal():
    std, spread = stats(paddle.nn.Conv2D(16, 8, 3, padding=1).weight.numpy())
    print(f"Conv2D(16, 8, 3): weight std {std:.4f} (he normal {np.sqrt(2 / 144):.4f}, torch {1 / np.sqrt(432):.4f}), max/std {spread:.2f}")
    assert abs(std / np.sqrt(2 / 144) - 1) < 0.1 and spread > 2.5  # normal: past a uniform's bound


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_conv_weight_is_he_normal()
    print("confirmed: conv-init-he-normal")
