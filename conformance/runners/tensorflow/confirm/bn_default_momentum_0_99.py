"""bn-default-momentum-0.99

Keras: keras.layers.BatchNormalization() has momentum=0.99, the OLD statistic's weight, so a new batch
weighs 0.01 in the moving statistics. The reference semantics' default BatchNorm weighs the new batch
0.1 (torch momentum=0.1, 0.9 in the old-statistic convention).

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
tf.get_logger().setLevel("ERROR")  # TF 2.15: "Gradients do not exist for variables ..."
KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15 ships Keras 2, whose weights are tf.Variables


def test_default_batchnorm_weighs_a_new_batch_0_01():
    bn = keras.layers.BatchNormalization()  # momentum left out
    bn.build((None, 4))
    bn(tf.constant(np.full((4, 4), 10.0, np.float32)), training=True)  # one batch of 10s; moving mean starts at 0
    mean = bn.moving_mean.numpy()
    print(f"BatchNormalization momentum {bn.momentum}; moving_mean after one batch of 10s {mean} "
          f"(0.01 * 10; the reference's 0.1 * 10 = 1.0)")
    assert np.allclose(mean, 0.1, rtol=1e-5)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_default_batchnorm_weighs_a_new_batch_0_01()
    print("confirmed: bn-default-momentum-0.99")
