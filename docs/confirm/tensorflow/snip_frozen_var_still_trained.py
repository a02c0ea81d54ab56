"""`layer.trainable = False` (or `variable.trainable = False`) only moves the weight out of
`trainable_weights`: the backing tf.Variable stays trainable, GradientTape still watches it and
returns a gradient when it is asked for, and apply_gradients updates whatever it is handed."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, keras

a, b = keras.layers.Dense(3), keras.layers.Dense(2)
a.build((None, 4)); b.build((None, 3))
a.trainable = False                     # the Keras way to freeze a layer
b.kernel.trainable = False              # one weight
print("a.kernel in trainable_weights:", any(v is a.kernel for v in a.trainable_weights),
      "| backing tf.Variable trainable:", a.kernel.value.trainable, b.kernel.value.trainable)
params = [a.kernel, a.bias, b.kernel, b.bias]   # handed explicitly, as a user listing variables does
before = [np.asarray(v).copy() for v in params]
opt = keras.optimizers.SGD(0.1, weight_decay=0.05)
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.square(b(a(tf.ones((8, 4)))) - 1.0))
grads = tape.gradient(loss, params)
print("gradients None?", [g is None for g in grads])
opt.apply_gradients(zip(grads, params))
moved = [not np.array_equal(x, np.asarray(v)) for x, v in zip(before, params)]
print("moved:", moved)
assert all(g is not None for g in grads) and moved[0] and moved[2]
print("confirmed: frozen weights get a gradient and are updated;", tf.__version__, keras.__version__)
