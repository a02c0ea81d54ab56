"""tape.gradient(..., unconnected_gradients=ZERO) returns zeros for every unconnected source,
including a layer never used in any forward pass (torch's zero_grad(set_to_none=False) only
zero-fills gradients that exist, so a never-used parameter stays None). Also: in TF 2.21 the ZERO
option raises AttributeError on Keras 3 variables (tensorflow#116636); their `.value` works."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf, keras

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
zero = tape.gradient(loss, [v.value for v in srcs], unconnected_gradients=tf.UnconnectedGradients.ZERO)
print("ZERO on v.value:", [None if g is None else float(tf.reduce_max(tf.abs(g))) for g in zero])
assert none[2] is None and zero[2] is not None and float(tf.reduce_max(tf.abs(zero[2]))) == 0.0
print("confirmed: the never-used layer gets zeros under ZERO;", tf.__version__, keras.__version__)
