"""linear-init-xavier-uniform

Keras: a Dense layer built without initializers draws its kernel with glorot_uniform, U(-b, b), b =
sqrt(6 / (fan_in + fan_out)). For Dense(64) on 256 inputs that is a standard deviation of sqrt(2 / 320) =
0.079; torch's nn.Linear(256, 64) draws kaiming_uniform(a=sqrt(5)), U(-1/16, 1/16), standard deviation
0.036.

Upstream: https://keras.io/api/layers/core_layers/dense
"""
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's C++ INFO/WARNING lines; before the import
warnings.simplefilter("ignore")
_null, _stderr = os.open(os.devnull, os.O_WRONLY), os.dup(2)
os.dup2(_null, 2)  # TF 2.21 prints its oneDNN notice through absl at import, past TF_CPP_MIN_LOG_LEVEL
try:
    import numpy as np
    import tensorflow as tf
    import keras
finally:
    os.dup2(_stderr, 2)
    os.close(_stderr)
    os.close(_null)
keras.utils.set_random_seed(0)


def stats(w):
    """(std, max |w| / std): about 1.73 for a uniform draw, past 3 for a normal one of this size."""
    w = np.asarray(w, dtype=np.float64)
    return w.std(), np.abs(w).max() / w.std()


def test_dense_kernel_is_glorot_uniform():
    layer = keras.layers.Dense(64)
    layer.build((None, 256))
    std, spread = stats(layer.kernel)
    print(f"Dense(64) on 256 inputs: kernel std {std:.4f} (glorot {np.sqrt(2 / 320):.4f}, torch {1 / np.sqrt(768):.4f}), max/std {spread:.2f}")
    assert abs(std / np.sqrt(2 / 320) - 1) < 0.05 and spread < 1.8  # uniform, Glorot's scale


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_dense_kernel_is_glorot_uniform()
    print("confirmed: linear-init-xavier-uniform")
