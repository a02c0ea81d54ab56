"""adam-default-eps-1e-7

Keras: keras.optimizers.Adam() and AdamW() built without epsilon use 1e-7 (their default learning rate
0.001 and betas (0.9, 0.999) are torch's). The reference semantics' default epsilon is 1e-8; the
difference shows in a step with a tiny gradient. The AdamW page https://keras.io/api/optimizers/adamw
shows the same default.

Upstream: https://keras.io/2.16/api/optimizers/adam/
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

G = np.array([1e-8, 1e-6, 1.0], np.float32)  # tiny gradients: the step shows epsilon


def first_step(opt):
    v = Variable(np.zeros(3, np.float32))  # w = 0: AdamW's default decay has nothing to decay
    opt.apply_gradients([(tf.constant(G), v)])
    g = G.astype(np.float64)
    m, s = 0.1 * g, 0.001 * g * g
    # Keras' step (epsilon hat, variant adam-epsilon-hat) with lr 1e-3 and either epsilon
    want = {eps: -1e-3 * np.sqrt(0.001) / 0.1 * m / (np.sqrt(s) + eps) for eps in (1e-7, 1e-8)}
    return np.asarray(v), want


def test_adam_without_epsilon_uses_1e_7():
    opt = keras.optimizers.Adam()  # epsilon (and learning_rate) left out
    got, want = first_step(opt)
    print(f"Adam epsilon {opt.epsilon}, learning_rate {float(opt.learning_rate):.3g}, betas {opt.beta_1, opt.beta_2}; "
          f"one step with gradient {G}: {got}, eps 1e-7 predicts {want[1e-7]}, eps 1e-8 (reference) {want[1e-8]}")
    assert np.allclose(got, want[1e-7], rtol=1e-4) and not np.allclose(got, want[1e-8], rtol=1e-2)


def test_adamw_without_epsilon_uses_1e_7():
    opt = keras.optimizers.AdamW()
    got, want = first_step(opt)
    print(f"AdamW epsilon {opt.epsilon}; one step with gradient {G}: {got}, eps 1e-7 predicts {want[1e-7]}, "
          f"eps 1e-8 (reference) {want[1e-8]}")
    assert np.allclose(got, want[1e-7], rtol=1e-4) and not np.allclose(got, want[1e-8], rtol=1e-2)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_adam_without_epsilon_uses_1e_7()
    test_adamw_without_epsilon_uses_1e_7()
    print("confirmed: adam-default-eps-1e-7")
