"""bias-init-zero

Keras: Dense and Conv2D built without initializers start their bias at zero (bias_initializer='zeros');
torch's nn.Linear and nn.Conv2d draw it from U(-1/sqrt(fan_in), 1/sqrt(fan_in)).

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


def test_biases_start_at_zero():
    dense, conv = keras.layers.Dense(64), keras.layers.Conv2D(8, 3, padding="same")
    dense.build((None, 256))
    conv.build((None, 4, 4, 16))
    print("Dense bias max |b|", float(np.abs(dense.bias).max()), "| Conv2D bias max |b|", float(np.abs(conv.bias).max()))
    assert not np.any(np.asarray(dense.bias)) and not np.any(np.asarray(conv.bias))


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_biases_start_at_zero()
    print("confirmed: bias-init-zero")
