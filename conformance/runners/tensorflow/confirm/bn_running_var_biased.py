"""bn-running-var-biased

Keras BatchNormalization updates moving_variance with the biased (1/n) batch variance:
moving_var * momentum + var(batch) * (1 - momentum), without Bessel's correction. The reference
semantics (torch) use the unbiased (1/(n-1)) batch variance.

Upstream: https://github.com/tensorflow/tensorflow/issues/55545
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
tf.get_logger().setLevel("ERROR")  # TF 2.15: "Gradients do not exist for variables ..."
KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15 ships Keras 2, whose weights are tf.Variables


def test_moving_variance_takes_the_biased_batch_variance():
    bn = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)
    bn.build((None, 1))
    x = np.array([[1.0], [3.0]], np.float32)  # biased variance 1, unbiased 2
    bn(tf.constant(x), training=True)
    mean, var = np.asarray(bn.moving_mean), np.asarray(bn.moving_variance)
    biased, unbiased = 0.9 * 1 + 0.1 * x.var(0), 0.9 * 1 + 0.1 * x.var(0, ddof=1)
    print(f"one batch [1, 3]: moving_mean {mean}, moving_variance {var} (biased {biased}, unbiased {unbiased})")
    assert np.allclose(mean, 0.1 * x.mean(0)) and np.allclose(var, biased) and not np.allclose(var, unbiased)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_moving_variance_takes_the_biased_batch_variance()
    print("confirmed: bn-running-var-biased")
