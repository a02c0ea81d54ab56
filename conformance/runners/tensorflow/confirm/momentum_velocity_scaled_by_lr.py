"""momentum-velocity-scaled-by-lr

Keras SGD with momentum keeps a velocity in parameter units, v = momentum * v - lr * g; w += v, so each
gradient enters the velocity scaled by the learning rate of its step and a learning-rate change
(optimizer.learning_rate = ...) reaches new gradients only. The reference semantics (torch) keep raw
gradients, buf = momentum * buf + g; w -= lr * buf, so a new rate scales the whole buffer at once. They
agree while the rate is constant: with lr 0, 0, 0.1 and gradient 1, Keras moves w by 0.1, torch by
0.1 * (1 + 0.9 + 0.81) = 0.271.

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


def test_learning_rate_change_reaches_new_gradients_only():
    w = tf.Variable([1.0])
    opt = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    g = tf.constant([1.0])  # the same gradient every step
    lrs = [0.0, 0.0, 0.1]
    torch_w, buf = 1.0, 0.0
    for lr in lrs:
        opt.learning_rate = lr  # the way Keras users change it between steps
        opt.apply_gradients([(g, w)])
        buf = 0.9 * buf + 1.0
        torch_w -= lr * buf
    got = float(w.numpy()[0])
    print(f"after steps with lr {lrs}: keras w {got:.6f}, velocity-scaled 0.9, torch-style buffer {torch_w:.6f}")
    assert np.isclose(got, 0.9, atol=1e-6) and not np.isclose(got, torch_w, atol=1e-3)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_learning_rate_change_reaches_new_gradients_only()
    print("confirmed: momentum-velocity-scaled-by-lr")
