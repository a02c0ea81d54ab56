"""embedding-init-xavier-uniform

paddle.nn.Embedding built without weight_attr initializes its table with Paddle's default parameter
initializer, XavierUniform over (rows, dim): U(-b, b), b = sqrt(6 / (rows + dim)). For Embedding(1000,
16) that is a standard deviation of 0.044, shrinking as the vocabulary grows; torch's nn.Embedding draws
N(0, 1).

Upstream: no page states it for Embedding (explained, undocumented); this snippet measures it.
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


def test_embedding_is_xavier_uniform():
    std, spread = stats(paddle.nn.Embedding(1000, 16).weight.numpy())
    print(f"Embedding(1000, 16): std {std:.4f} (xavier {np.sqrt(2 / 1016):.4f}, torch 1.0), max/std {spread:.2f}")
    assert abs(std / np.sqrt(2 / 1016) - 1) < 0.05 and spread < 1.8


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_embedding_is_xavier_uniform()
    print("confirmed: embedding-init-xavier-uniform")
