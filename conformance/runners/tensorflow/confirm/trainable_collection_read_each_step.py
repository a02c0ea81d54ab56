"""trainable-collection-read-each-step

Keras: the custom loop (like fit's train_step) hands the optimizer model.trainable_variables as they are
at each step, so a layer frozen between steps drops out of the update (no gradient, no momentum, no
decoupled decay) although the optimizer was built with it at the first step. The reference semantics'
optimizer keeps the parameters it was built with: momentum and decay keep moving the frozen layer.

Upstream: https://TensorFlow.org/guide/keras/customizing_what_happens_in_fit
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


def test_layer_frozen_between_steps_drops_out_of_the_update():
    keras.utils.set_random_seed(0)
    a, b = keras.layers.Dense(3), keras.layers.Dense(2)
    model = keras.Sequential([a, b])
    model.build((None, 4))
    opt = keras.optimizers.SGD(0.1, momentum=0.9, weight_decay=0.05)
    x, t = tf.random.stateless_normal((5, 4), [1, 2]), tf.zeros((5, 2))

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - t))
        variables = model.trainable_variables  # read now, as the loop does at every step
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return len(variables)

    first = step()  # the optimizer is built here, with a's weights
    a.trainable = False
    a0, b0 = a.kernel.numpy().copy(), b.kernel.numpy().copy()
    second = step()
    a_moved, b_moved = not np.array_equal(a0, a.kernel.numpy()), not np.array_equal(b0, b.kernel.numpy())
    print(f"step 0 hands over {first} variables; after a.trainable = False step 1 hands over {second}: "
          f"a.kernel moved {a_moved} (momentum and decay would move it), b.kernel moved {b_moved}")
    assert first == 4 and second == 2 and not a_moved and b_moved


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_layer_frozen_between_steps_drops_out_of_the_update()
    print("confirmed: trainable-collection-read-each-step")
