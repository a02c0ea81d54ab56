"""norm-default-eps-1e-3

Keras: keras.layers.BatchNormalization() and keras.layers.LayerNormalization() built without epsilon
add 0.001 to the variance. The reference semantics' default epsilon is 1e-5 (torch); the difference
shows where the variance is small. The LayerNormalization page is
https://keras.io/api/layers/normalization_layers/layer_normalization.

Upstream: https://keras.io/api/layers/normalization_layers/batch_normalization/
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


def test_batchnormalization_without_epsilon_adds_1e_3():
    bn = keras.layers.BatchNormalization()  # epsilon left out
    bn.build((None, 1))
    x = np.array([[-0.01], [0.01]], np.float32)  # batch variance 1e-4: the epsilon shows
    y = bn(tf.constant(x), training=True).numpy()
    want = {eps: x / np.sqrt(1e-4 + eps) for eps in (1e-3, 1e-5)}
    print(f"BatchNormalization epsilon {bn.epsilon}; batch [-0.01, 0.01] -> {y.ravel()}, "
          f"eps 1e-3 predicts {want[1e-3].ravel()}, eps 1e-5 (reference) {want[1e-5].ravel()}")
    assert np.allclose(y, want[1e-3], rtol=1e-4) and not np.allclose(y, want[1e-5], rtol=1e-2)


def test_layernormalization_without_epsilon_adds_1e_3():
    ln = keras.layers.LayerNormalization()  # epsilon left out
    ln.build((None, 4))
    x = np.array([[-0.015, -0.005, 0.005, 0.015]], np.float32)  # variance 1.25e-4
    y = ln(tf.constant(x)).numpy()
    want = {eps: (x - x.mean()) / np.sqrt(x.var() + eps) for eps in (1e-3, 1e-5)}
    print(f"LayerNormalization epsilon {ln.epsilon}; {x.ravel()} -> {y.ravel()}, eps 1e-3 predicts "
          f"{want[1e-3].ravel()}, eps 1e-5 (reference) {want[1e-5].ravel()}")
    assert np.allclose(y, want[1e-3], rtol=1e-4) and not np.allclose(y, want[1e-5], rtol=1e-2)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_batchnormalization_without_epsilon_adds_1e_3()
    test_layernormalization_without_epsilon_adds_1e_3()
    print("confirmed: norm-default-eps-1e-3")
