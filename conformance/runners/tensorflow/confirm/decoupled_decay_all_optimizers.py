"""decoupled-decay-all-optimizers

Keras (TF 2.15's tf.keras optimizers and Keras 3) applies an optimizer's weight_decay to every optimizer
the AdamW way, w -= lr * wd * w before the update, SGD with momentum and Adam included. The reference
semantics add weight_decay to the gradient as L2 for SGD, momentum and Adam (decoupled for AdamW only);
with momentum or Adam moments the two differ (plain SGD is where they coincide).

Upstream: https://github.com/keras-team/keras/issues/19051
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
Variable = tf.Variable if KERAS2 else keras.Variable  # Keras 2 has no keras.Variable

W0, G, LR, WD = np.array([1.0, -2.0], np.float32), np.array([0.5, 0.25], np.float32), 0.1, 0.1


def two_steps(opt):
    v = Variable(W0)
    for _ in range(2):
        opt.apply_gradients([(tf.constant(G), v)])
    return np.asarray(v)


def test_sgd_momentum_weight_decay_is_decoupled():
    got = two_steps(keras.optimizers.SGD(LR, momentum=0.9, weight_decay=WD))
    w, g = W0.astype(np.float64), G.astype(np.float64)
    coupled, decoupled, buf_c, buf_d = w.copy(), w.copy(), 0.0, 0.0
    for _ in range(2):
        buf_c = 0.9 * buf_c + g + WD * coupled          # the reference: L2 in the gradient
        coupled = coupled - LR * buf_c
        decoupled = decoupled - LR * WD * decoupled     # decoupled, then the plain momentum step
        buf_d = 0.9 * buf_d + g
        decoupled = decoupled - LR * buf_d
    print(f"SGD(momentum=0.9, weight_decay=0.1), 2 steps: keras {got}, decoupled {decoupled}, L2-coupled {coupled}")
    assert np.allclose(got, decoupled, atol=1e-6) and not np.allclose(got, coupled, atol=1e-4)


def test_adam_weight_decay_is_decoupled():
    got = two_steps(keras.optimizers.Adam(LR, epsilon=1e-8, weight_decay=WD))
    w, g = W0.astype(np.float64), G.astype(np.float64)
    coupled, decoupled, mc, vc, md, vd = w.copy(), w.copy(), 0.0, 0.0, 0.0, 0.0
    for t in (1, 2):
        gc = g + WD * coupled                           # the reference: L2 in the gradient
        mc, vc = 0.9 * mc + 0.1 * gc, 0.999 * vc + 0.001 * gc * gc
        coupled = coupled - LR * (mc / (1 - 0.9 ** t)) / (np.sqrt(vc / (1 - 0.999 ** t)) + 1e-8)
        decoupled = decoupled - LR * WD * decoupled     # decoupled, then the plain Adam step
        md, vd = 0.9 * md + 0.1 * g, 0.999 * vd + 0.001 * g * g
        decoupled = decoupled - LR * (md / (1 - 0.9 ** t)) / (np.sqrt(vd / (1 - 0.999 ** t)) + 1e-8)
    print(f"Adam(weight_decay=0.1), 2 steps: keras {got}, decoupled {decoupled}, L2-coupled {coupled}")
    assert np.allclose(got, decoupled, atol=1e-6) and not np.allclose(got, coupled, atol=1e-4)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_sgd_momentum_weight_decay_is_decoupled()
    test_adam_weight_decay_is_decoupled()
    print("confirmed: decoupled-decay-all-optimizers")
