"""sgd-default-lr-0.01

Keras: keras.optimizers.SGD() built without learning_rate uses 0.01, with momentum or without (its
default momentum 0 is torch's). The reference semantics' default SGD learning rate is 1e-3.

Upstream: https://tensorflow.org/versions/r2.8/api_docs/python/tf/keras/optimizers/SGD
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


def first_step(opt):
    w = tf.Variable([1.0, 2.0])
    opt.apply_gradients([(tf.constant([1.0, 1.0]), w)])
    return np.array([1.0, 2.0]) - w.numpy()


def test_sgd_without_learning_rate_steps_with_0_01():
    opt = keras.optimizers.SGD()  # learning_rate left out
    moved = first_step(opt)
    print(f"SGD learning_rate {float(opt.learning_rate):.3g}, momentum {opt.momentum}; one step with gradient 1 "
          f"moved w by {moved} (the reference: 1e-3)")
    assert np.allclose(moved, 0.01, rtol=1e-5)


def test_momentum_sgd_without_learning_rate_steps_with_0_01():
    opt = keras.optimizers.SGD(momentum=0.9)  # learning_rate left out
    moved = first_step(opt)
    print(f"SGD(momentum=0.9) learning_rate {float(opt.learning_rate):.3g}; first step with gradient 1 moved w by "
          f"{moved} (the reference: 1e-3)")
    assert np.allclose(moved, 0.01, rtol=1e-5)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_sgd_without_learning_rate_steps_with_0_01()
    test_momentum_sgd_without_learning_rate_steps_with_0_01()
    print("confirmed: sgd-default-lr-0.01")
