"""conv-init-xavier-uniform

Keras: a Conv2D layer built without initializers draws its kernel with glorot_uniform, U(-b, b), b =
sqrt(6 / (fan_in + fan_out)), fans counting the kernel's area. For Conv2D(8, 3) on 16 channels: fan_in
144, fan_out 72, standard deviation 0.096; torch's nn.Conv2d(16, 8, 3) draws U(-1/12, 1/12), standard
deviation 0.048.

Upstream: https://www.tensorflow.org/api_docs/python/tf/keras/layers/Conv2D?hl=uk
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


def test_conv_kernel_is_glorot_uniform():
    layer = keras.layers.Conv2D(8, 3, padding="same")
    layer.build((None, 4, 4, 16))
    std, spread = stats(layer.kernel)
    print(f"Conv2D(8, 3) on 16 channels: kernel std {std:.4f} (glorot {np.sqrt(2 / 216):.4f}, torch {1 / np.sqrt(432):.4f}), max/std {spread:.2f}")
    assert abs(std / np.sqrt(2 / 216) - 1) < 0.1 and spread < 1.8


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_conv_kernel_is_glorot_uniform()
    print("confirmed: conv-init-xavier-uniform")
