"""adamw-default-decay-0.004

Keras: keras.optimizers.AdamW() built without weight_decay decays by 0.004 (lr-scaled and decoupled, as
an explicit weight_decay: w -= lr * 0.004 * w). The reference semantics' AdamW default weight_decay is
0.01 (torch).

Upstream: https://keras.io/api/optimizers/adamw
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


def test_adamw_without_weight_decay_decays_by_0_004():
    w0 = np.array([1.0, -2.0], np.float32)
    v = Variable(w0)
    opt = keras.optimizers.AdamW(learning_rate=1.0)  # weight_decay left out; lr 1 makes the decay readable
    opt.apply_gradients([(tf.constant(np.zeros(2, np.float32)), v)])  # zero gradient: only the decay moves w
    got = np.asarray(v)
    print(f"AdamW weight_decay {opt.weight_decay}; one zero-gradient step with lr 1 from {w0}: {got} "
          f"(0.004 predicts {w0 * 0.996}, 0.01 (reference) {w0 * 0.99})")
    assert np.allclose(got, w0 * (1 - 0.004), rtol=1e-6)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_adamw_without_weight_decay_decays_by_0_004()
    print("confirmed: adamw-default-decay-0.004")
