"""zeros-clear-fills-never-used

TensorFlow has no gradient buffers to zero-fill; the zeros variant is tape.gradient(...,
unconnected_gradients=tf.UnconnectedGradients.ZERO), which returns "a zero tensor in the shape of x" for
every unconnected source: a layer left out of this step and one never used at all alike. The reference
semantics zero-fill only the gradients that exist, so a never-used parameter keeps None. (TF 2.21 raises
AttributeError for ZERO with Keras 3 variables as sources, tensorflow#116636; their tf.Variable,
`.value`, works; Keras 2 weights are tf.Variables.)

Upstream: https://tensorflow.org/api_docs/python/tf/UnconnectedGradients
"""
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's C++ INFO/WARNING lines; before the import
warnings.simplefilter("ignore")
_null, _stderr = os.open(os.devnull, os.O_WRONLY), os.dup(2)
os.dup2(_null, 2)  # TF 2.21 prints its oneDNN notice through absl at import, past TF_CPP_MIN_LOG_LEVEL
try:
    import tensorflow as tf
    import keras
finally:
    os.dup2(_stderr, 2)
    os.close(_stderr)
    os.close(_null)
tf.get_logger().setLevel("ERROR")  # TF 2.15: "Gradients do not exist for variables ..."
KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15 ships Keras 2, whose weights are tf.Variables


def test_zero_gives_layers_left_out_and_never_used_zero_gradients():
    keras.utils.set_random_seed(0)
    a, spare, b = keras.layers.Dense(4), keras.layers.Dense(4), keras.layers.Dense(2)
    for layer in (a, spare, b):
        layer.build((None, 4))
    x = tf.ones((3, 4))
    srcs = a.trainable_variables + spare.trainable_variables + b.trainable_variables
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_mean(b(x) ** 2)  # this step leaves a out; spare is never used
    none = tape.gradient(loss, srcs)
    try:
        tape.gradient(loss, srcs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        keras_sources = "ok"
    except AttributeError as exc:
        keras_sources = f"AttributeError: {exc}"
    backing = srcs if KERAS2 else [v.value for v in srcs]  # the tf.Variables behind the weights
    zero = tape.gradient(loss, backing, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    size = [None if g is None else float(tf.reduce_max(tf.abs(g))) for g in zero]
    print(f"gradients (a.kernel, a.bias, spare.kernel, spare.bias, b.kernel, b.bias): default NONE "
          f"{['None' if g is None else 'tensor' for g in none]}; ZERO, max |g| {size}; "
          f"ZERO with Keras variables as sources: {keras_sources}")
    assert none[0] is None and none[2] is None  # the default: unconnected -> None
    assert all(zero[i] is not None and size[i] == 0.0 for i in range(4))  # ZERO: zeros, never-used spare too
    assert size[4] > 0


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_zero_gives_layers_left_out_and_never_used_zero_gradients()
    print("confirmed: zeros-clear-fills-never-used")
