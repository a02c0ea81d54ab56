"""A per-weight Keras regularizer is a loss term (L2(l2): l2*sum(w**2), gradient 2*l2*w); it does
not replace the optimizer's weight_decay, which still applies (decoupled) to the same weight."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, keras

lr, wd = 0.05, 0.1
d = keras.layers.Dense(2, kernel_regularizer=keras.regularizers.L2(0.0), use_bias=False)
d.build((None, 3))
w0 = np.asarray(d.kernel).astype(np.float64)
x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(d(x) ** 2) + tf.add_n(d.losses)
g = tape.gradient(loss, d.trainable_variables)
keras.optimizers.SGD(lr, weight_decay=wd).apply_gradients(zip(g, d.trainable_variables))
g0 = np.asarray(g[0]).astype(np.float64)
w = np.asarray(d.kernel)
print("regularizer 0 replacing decay:", np.abs(w - (w0 - lr * g0)).max(), "| both applied:", np.abs(w - (w0 * (1 - lr * wd) - lr * g0)).max())
assert np.allclose(w, w0 * (1 - lr * wd) - lr * g0, atol=1e-6)
# the gradient of L2(c/2) is c*w
e = keras.layers.Dense(2, kernel_regularizer=keras.regularizers.L2(0.15), use_bias=False); e.build((None, 3))
with tf.GradientTape() as tape:
    reg = tf.add_n(e.losses)
np.testing.assert_allclose(tape.gradient(reg, e.kernel), 0.3 * np.asarray(e.kernel), rtol=1e-6)
print("confirmed: L2(0.15) gradient = 0.3*w, and the optimizer's decay still applies;", tf.__version__, keras.__version__)
