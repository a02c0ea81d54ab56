"""The Keras custom loop hands the optimizer model.trainable_variables at every step (as fit's own
train_step does with self.trainable_variables): a layer frozen between steps drops out of that list,
so it gets no gradient and the optimizer (momentum, decoupled weight_decay) leaves it alone, although
the optimizer was built with it at the first step."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, keras

print("tf", tf.__version__, "keras", keras.__version__)
a, b = keras.layers.Dense(3), keras.layers.Dense(2)
model = keras.Sequential([a, b]); model.build((None, 4))
opt = keras.optimizers.SGD(0.1, momentum=0.9, weight_decay=0.05)
x, t = tf.random.stateless_normal((5, 4), [1, 2]), tf.zeros((5, 2))


def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - t))
    variables = model.trainable_variables            # read now, as the loop does at every step
    opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return len(variables)


print("step 0 hands over", step(), "variables")
a.trainable = False
before = a.kernel.numpy().copy()
print("after a.trainable = False: step 1 hands over", step(), "variables; a.kernel moved:",
      not np.array_equal(before, a.kernel.numpy()), "(momentum and decay would move it if it were handed over)")
