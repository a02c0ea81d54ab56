"""Keras Adam's epsilon is "epsilon hat": added to sqrt(v), not to sqrt(v_hat). For gradient
elements near epsilon/sqrt(1-beta2^t) the step differs visibly from the textbook/torch form."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, keras

KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15: Keras 2, whose weights are tf.Variables
Variable = tf.Variable if KERAS2 else keras.Variable  # Keras 2 has no keras.Variable

g = np.array([1e-3, 1e-4, 1e-1], np.float32)
lr, eps = 0.1, 1e-8
v = Variable(np.zeros(3, np.float32))
keras.optimizers.Adam(lr, epsilon=eps).apply_gradients([(tf.constant(g), v)])
g64 = g.astype(np.float64)
m, s = 0.1 * g64, 0.001 * g64 * g64
textbook = -lr * (m / 0.1) / (np.sqrt(s / 0.001) + eps)                  # torch / the suite's oracle
eps_hat = -lr * np.sqrt(0.001) / 0.1 * m / (np.sqrt(s) + eps)             # Kingma & Ba, before section 2.1
print("keras   ", np.asarray(v)); print("textbook", textbook); print("eps-hat ", eps_hat)
assert np.allclose(np.asarray(v), eps_hat, rtol=1e-5) and abs(np.asarray(v)[1] - textbook[1]) > 1e-5
print("confirmed: step 1 differs by", np.abs(np.asarray(v) - textbook).max(), tf.__version__, keras.__version__)
