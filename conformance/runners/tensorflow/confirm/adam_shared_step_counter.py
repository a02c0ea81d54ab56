"""adam-shared-step-counter

Keras Adam/AdamW bias-correct with the optimizer's `iterations`, shared by all variables: a variable
skipped in one apply_gradients call (None gradient) resumes with t = iterations + 1, not with its own
step count. The reference semantics (torch) count each parameter's own steps.

Upstream: no upstream page states it.
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

LR, B1, B2, EPS = 0.1, 0.9, 0.999, 1e-8


def per_parameter(steps):  # the reference: t counts the steps that updated this parameter
    p, m, v, t = np.ones(2), 0.0, 0.0, 0
    for g in steps:
        if g is None:
            continue
        t += 1
        m, v = B1 * m + (1 - B1) * g, B2 * v + (1 - B2) * g * g
        p = p - LR * (m / (1 - B1 ** t)) / (np.sqrt(v / (1 - B2 ** t)) + EPS)
    return p


def shared_iterations(steps):  # t counts the optimizer's apply_gradients calls (Keras' epsilon hat)
    p, m, v = np.ones(2), 0.0, 0.0
    for t, g in enumerate(steps, 1):
        if g is None:
            continue
        m, v = B1 * m + (1 - B1) * g, B2 * v + (1 - B2) * g * g
        p = p - LR * np.sqrt(1 - B2 ** t) / (1 - B1 ** t) * m / (np.sqrt(v) + EPS)
    return p


def test_skipped_variable_resumes_with_the_shared_step_count():
    a, b = Variable(np.ones(2, np.float32)), Variable(np.ones(2, np.float32))
    opt = keras.optimizers.Adam(LR, epsilon=EPS)
    ga = np.array([0.5, -0.3], np.float32)
    schedule = [ga, ga, None, ga]  # a gets a gradient in steps 1, 2 and 4; b in every step
    with warnings.catch_warnings():  # Keras 3 warns "Gradients do not exist" for the skipped step, under pytest too
        warnings.simplefilter("ignore")
        for g in schedule:
            opt.apply_gradients([(None if g is None else tf.constant(g), a), (tf.constant(ga), b)])
    steps = [None if g is None else g.astype(np.float64) for g in schedule]
    got = np.asarray(a)
    print(f"a after steps (g, g, skipped, g): keras {got}, shared iterations {shared_iterations(steps)}, "
          f"per-parameter t {per_parameter(steps)}")
    assert np.allclose(got, shared_iterations(steps), atol=1e-6)
    assert not np.allclose(got, per_parameter(steps), atol=1e-4)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_skipped_variable_resumes_with_the_shared_step_count()
    print("confirmed: adam-shared-step-counter")
