"""tape.gradient(..., unconnected_gradients=ZERO) with Keras 3 variables as sources."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf, keras, traceback

a, b = keras.layers.Dense(4), keras.layers.Dense(2)
a.build((None, 4)); b.build((None, 4))
x = tf.ones((3, 4))
srcs = a.trainable_variables + b.trainable_variables
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(b(x) ** 2)  # a not on the path
try:
    g = tape.gradient(loss, srcs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    print("keras variables: ok", [None if t is None else t.shape for t in g])
except Exception as e:
    print("keras variables:", type(e).__name__, e)
    traceback.print_exc(limit=-3)
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(b(x) ** 2)
g = tape.gradient(loss, [v.value for v in srcs], unconnected_gradients=tf.UnconnectedGradients.ZERO)
print("underlying tf.Variables (v.value):", [float(tf.reduce_sum(tf.abs(t))) for t in g])
print(tf.__version__, keras.__version__)
