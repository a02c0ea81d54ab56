"""`layer.trainable = False` (or `variable.trainable = False`) only moves the weight out of
`trainable_weights`: the backing tf.Variable stays trainable, GradientTape still watches it and
returns a gradient when it is asked for, and apply_gradients updates whatever it is handed.

Keras 2 (TF <= 2.15) has no per-weight setter: one weight is frozen by creating it with
add_weight(trainable=False), which makes the tf.Variable itself non-trainable. The tape does not
watch it, so it gets None and apply_gradients leaves it alone: there only the layer flag keeps training."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, keras

KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15: Keras 2, whose weights are tf.Variables


class DenseFrozenKernel(keras.layers.Layer):        # Keras 2: one weight frozen at creation
    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", (input_shape[-1], 2), trainable=False)
        self.bias = self.add_weight("bias", (2,), initializer="zeros")
        super().build(input_shape)  # marks it built: else its first call builds new weights

    def call(self, x):
        return x @ self.kernel + self.bias


a = keras.layers.Dense(3)
b = DenseFrozenKernel() if KERAS2 else keras.layers.Dense(2)
a.build((None, 4)); b.build((None, 3))
a.trainable = False                     # the Keras way to freeze a layer
if not KERAS2:
    b.kernel.trainable = False          # one weight (Keras 3)
backing = [a.kernel, b.kernel] if KERAS2 else [a.kernel.value, b.kernel.value]
print("a.kernel in trainable_weights:", any(v is a.kernel for v in a.trainable_weights),
      "| b.kernel in trainable_weights:", any(v is b.kernel for v in b.trainable_weights),
      "| backing tf.Variable trainable:", backing[0].trainable, backing[1].trainable)
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
assert grads[0] is not None and moved[0]                               # the frozen layer: both versions
assert grads[3] is not None and moved[3]                               # b's call uses these weights
assert (grads[2] is None and not moved[2]) if KERAS2 else (grads[2] is not None and moved[2])
print("confirmed: a frozen layer's weights get a gradient and are updated; one weight frozen",
      "at creation (Keras 2) is not" if KERAS2 else "by its flag (Keras 3) is too", tf.__version__, keras.__version__)
