"""tape.gradient(..., unconnected_gradients=ZERO) with Keras variables as sources (Keras 3: keras.Variable;
Keras 2, TF <= 2.15: plain tf.Variables)."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf, keras, traceback

KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15: Keras 2, whose weights are tf.Variables

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
backing = srcs if KERAS2 else [v.value for v in srcs]
g = tape.gradient(loss, backing, unconnected_gradients=tf.UnconnectedGradients.ZERO)
print("underlying tf.Variables (Keras 3: v.value):", [float(tf.reduce_sum(tf.abs(t))) for t in g])
print(tf.__version__, keras.__version__)
