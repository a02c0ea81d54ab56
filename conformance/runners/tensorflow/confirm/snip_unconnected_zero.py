"""tape.gradient(..., unconnected_gradients=ZERO) returns zeros for every unconnected source,
including a layer never used in any forward pass (torch's zero_grad(set_to_none=False) only
zero-fills gradients that exist, so a never-used parameter stays None). Also: in TF 2.21 the ZERO
option raises AttributeError on Keras 3 variables (tensorflow#116636); their `.value` works. Keras 2
(TF <= 2.15) weights are tf.Variables themselves and take ZERO as they are."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf, keras

KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15: Keras 2, whose weights are tf.Variables

a, spare, b = keras.layers.Dense(4), keras.layers.Dense(4), keras.layers.Dense(2)
for layer in (a, spare, b):
    layer.build((None, 4))
srcs = a.trainable_variables + spare.trainable_variables + b.trainable_variables
with tf.GradientTape(persistent=True) as tape:
    loss = tf.reduce_mean(b(a(tf.ones((3, 4)))) ** 2)       # spare never used
none = tape.gradient(loss, srcs)
print("NONE (default):", [g is None for g in none])
try:
    tape.gradient(loss, srcs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    print("ZERO on Keras variables: ok")
except AttributeError as exc:
    print("ZERO on Keras variables: AttributeError:", exc)
backing = srcs if KERAS2 else [v.value for v in srcs]   # the tf.Variables behind the weights
zero = tape.gradient(loss, backing, unconnected_gradients=tf.UnconnectedGradients.ZERO)
print("ZERO on the tf.Variables:", [None if g is None else float(tf.reduce_max(tf.abs(g))) for g in zero])
assert none[2] is None and zero[2] is not None and float(tf.reduce_max(tf.abs(zero[2]))) == 0.0
print("confirmed: the never-used layer gets zeros under ZERO;", tf.__version__, keras.__version__)
