"""Keras Adam/AdamW bias-correct with the optimizer's iteration count, shared by all variables:
a variable skipped in one apply_gradients call (None gradient) resumes with t = iterations + 1,
not with its own step count (torch keeps a per-parameter `step`)."""
import os, warnings
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
warnings.simplefilter("ignore")
import numpy as np, tensorflow as tf, keras

KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15: Keras 2, whose weights are tf.Variables
Variable = tf.Variable if KERAS2 else keras.Variable  # Keras 2 has no keras.Variable

lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
a, b = Variable(np.ones(2, np.float32)), Variable(np.ones(2, np.float32))
opt = keras.optimizers.Adam(lr, epsilon=eps)
ga = np.array([0.5, -0.3], np.float32)
schedule = [ga, ga, None, ga]                              # a is used, used, unused, used
for g in schedule:
    opt.apply_gradients([(None if g is None else tf.constant(g), a), (tf.constant(ga), b)])

def per_param(steps):
    p, m, v, t = np.ones(2), 0.0, 0.0, 0
    for g in steps:
        if g is None:
            continue
        t += 1
        m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p

def global_step(steps):
    p, m, v = np.ones(2), 0.0, 0.0
    for t, g in enumerate(steps, 1):
        if g is None:
            continue
        m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * g * g
        p = p - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
    return p

steps = [None if g is None else g.astype(np.float64) for g in schedule]
print("keras a           ", np.asarray(a)); print("per-parameter t   ", per_param(steps)); print("global iterations ", global_step(steps))
assert np.allclose(np.asarray(a), global_step(steps), atol=1e-6) and not np.allclose(np.asarray(a), per_param(steps), atol=1e-4)
print("confirmed: the bias correction uses the shared iteration count;", tf.__version__, keras.__version__)
