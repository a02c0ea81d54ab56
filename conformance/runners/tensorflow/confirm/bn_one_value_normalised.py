"""bn-one-value-normalised

Keras: BatchNormalization called with training=True on a batch of one vector does not raise (torch's
nn.BatchNorm1d raises "Expected more than 1 value per channel when training"). Its training-mode formula,
gamma * (batch - mean(batch)) / sqrt(var(batch) + epsilon) + beta, gives beta for one sample, no gradient
reaches the input or gamma, and moving_var = moving_var * momentum + var(batch) * (1 - momentum) takes
the batch's variance, 0.

Upstream: https://keras.io/api/layers/normalization_layers/batch_normalization/
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


def test_batch_of_one_normalises_to_beta():
    bn = keras.layers.BatchNormalization(momentum=0.9, beta_initializer=keras.initializers.Constant(0.5))
    x = tf.constant([[1.0, 2.0, 3.0, 4.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = bn(x, training=True)
        loss = tf.reduce_sum(y * tf.constant([[1.0, 2.0, 3.0, 4.0]]))
    dx = tape.gradient(loss, x)
    print("output", y.numpy(), "| moving mean", bn.moving_mean.numpy(), "variance", bn.moving_variance.numpy(),
          "| x grad", dx.numpy())
    assert np.allclose(y.numpy(), 0.5, atol=1e-3) and np.allclose(dx.numpy(), 0.0, atol=1e-3)
    assert np.allclose(bn.moving_variance.numpy(), 0.9) and np.allclose(bn.moving_mean.numpy(), [0.1, 0.2, 0.3, 0.4])


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_batch_of_one_normalises_to_beta()
    print("confirmed: bn-one-value-normalised")
