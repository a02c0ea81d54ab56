"""regularizer-adds-to-decoupled-decay

Keras: a weight regularizer (kernel_regularizer=L2(c)) is a penalty summed into the loss, gradient 2*c*w;
it does not replace the optimizer's weight_decay, which still decays the same weight (decoupled,
w -= lr * wd * w), so that weight is decayed twice. The reference semantics let a per-parameter
regularizer replace the optimizer's decay for that parameter.

Upstream: https://keras.io/api/layers/regularizers/
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

LR, WD = 0.05, 0.1
X = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))


def step(c):
    """One SGD(weight_decay=0.1) step on a Dense whose kernel carries L2(c)."""
    keras.utils.set_random_seed(0)
    d = keras.layers.Dense(2, kernel_regularizer=keras.regularizers.L2(c), use_bias=False)
    d.build((None, 3))
    w0 = np.asarray(d.kernel).astype(np.float64)
    with tf.GradientTape(persistent=True) as tape:
        reg = tf.add_n(d.losses)
        loss = tf.reduce_mean(d(X) ** 2) + reg
    g = tape.gradient(loss, d.trainable_variables)
    g_reg = np.asarray(tape.gradient(reg, d.kernel)).astype(np.float64)
    keras.optimizers.SGD(LR, weight_decay=WD).apply_gradients(zip(g, d.trainable_variables))
    return w0, np.asarray(g[0]).astype(np.float64), g_reg, np.asarray(d.kernel)


def test_zero_regularizer_does_not_switch_the_decay_off():
    w0, g, _, w = step(0.0)
    replaced, both = w0 - LR * g, w0 * (1 - LR * WD) - LR * g
    print(f"L2(0.0) + weight_decay 0.1: max |w - both applied| {np.abs(w - both).max():.2e}, "
          f"max |w - regularizer replacing the decay| {np.abs(w - replaced).max():.2e}")
    assert np.allclose(w, both, atol=1e-6) and not np.allclose(w, replaced, atol=1e-4)


def test_regularizer_and_decay_both_apply():
    w0, g, g_reg, w = step(0.15)  # g includes the regularizer's 2 * 0.15 * w
    replaced, both = w0 - LR * g, w0 * (1 - LR * WD) - LR * g
    print(f"L2(0.15) + weight_decay 0.1: regularizer gradient = 0.3 * w {np.allclose(g_reg, 0.3 * w0, rtol=1e-6)}; "
          f"max |w - both applied| {np.abs(w - both).max():.2e}, "
          f"max |w - regularizer replacing the decay| {np.abs(w - replaced).max():.2e}")
    np.testing.assert_allclose(g_reg, 0.3 * w0, rtol=1e-6)
    assert np.allclose(w, both, atol=1e-6) and not np.allclose(w, replaced, atol=1e-4)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_zero_regularizer_does_not_switch_the_decay_off()
    test_regularizer_and_decay_both_apply()
    print("confirmed: regularizer-adds-to-decoupled-decay")
