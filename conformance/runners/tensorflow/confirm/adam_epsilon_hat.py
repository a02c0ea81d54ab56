"""adam-epsilon-hat

Keras Adam/AdamW add epsilon to sqrt(v) before the bias correction ("epsilon hat", Kingma & Ba before
section 2.1): step = lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps), so the effective
epsilon is eps / sqrt(1 - beta2^t). The reference semantics add epsilon to sqrt(v_hat), after the bias
correction (torch); the steps differ for gradient elements near eps / sqrt(1 - beta2^t).

Upstream: https://keras.io/api/optimizers/adam/
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

G, LR, EPS = np.array([1e-3, 1e-4, 1e-1], np.float32), 0.1, 1e-8


def first_step(opt):
    v = Variable(np.zeros(3, np.float32))
    opt.apply_gradients([(tf.constant(G), v)])
    g = G.astype(np.float64)
    m, s = 0.1 * g, 0.001 * g * g
    textbook = -LR * (m / 0.1) / (np.sqrt(s / 0.001) + EPS)                  # torch, the reference
    eps_hat = -LR * np.sqrt(0.001) / 0.1 * m / (np.sqrt(s) + EPS)            # epsilon hat
    return np.asarray(v), eps_hat, textbook


def test_adam_adds_epsilon_before_the_bias_correction():
    got, eps_hat, textbook = first_step(keras.optimizers.Adam(LR, epsilon=EPS))
    print(f"Adam, one step with gradient {G}: keras {got}, epsilon hat {eps_hat}, textbook {textbook}")
    assert np.allclose(got, eps_hat, rtol=1e-5) and abs(got[1] - textbook[1]) > 1e-5


def test_adamw_adds_epsilon_before_the_bias_correction():
    got, eps_hat, textbook = first_step(keras.optimizers.AdamW(LR, weight_decay=0.0, epsilon=EPS))
    print(f"AdamW, one step with gradient {G}: keras {got}, epsilon hat {eps_hat}, textbook {textbook}")
    assert np.allclose(got, eps_hat, rtol=1e-5) and abs(got[1] - textbook[1]) > 1e-5


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_adam_adds_epsilon_before_the_bias_correction()
    test_adamw_adds_epsilon_before_the_bias_correction()
    print("confirmed: adam-epsilon-hat")
