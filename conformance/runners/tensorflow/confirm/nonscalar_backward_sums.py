"""nonscalar-backward-sums

TensorFlow: GradientTape.gradient of a loss left per sample (a vector) does not raise, as torch's
backward does ("grad can be implicitly created only for scalar outputs"): the target is summed ("A non-
scalar output is summed before differentiating, the same as a gradient tape would"), so every gradient is
batch-size times the mean loss's.

Upstream: https://www.tensorflow.org/api_docs/python/tf/keras/ops/grad
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


def test_tape_gradient_of_a_vector_sums():
    w = tf.Variable([[1.0], [2.0]])
    x = tf.constant(np.arange(16, dtype=np.float32).reshape(8, 2))
    with tf.GradientTape(persistent=True) as tape:
        per_sample = tf.reshape(tf.square(x @ w), [-1])
        mean = tf.reduce_mean(per_sample)
    summed, of_mean = tape.gradient(per_sample, w), tape.gradient(mean, w)
    print("grad of the per-sample vector", summed.numpy().ravel(), "| of its mean", of_mean.numpy().ravel())
    assert np.allclose(summed.numpy(), 8 * of_mean.numpy())


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_tape_gradient_of_a_vector_sums()
    print("confirmed: nonscalar-backward-sums")
