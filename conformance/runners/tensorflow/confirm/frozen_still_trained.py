"""frozen-still-trained

Keras: layer.trainable = False (Keras 3 also variable.trainable = False) only takes the weight out of
trainable_weights; the backing tf.Variable stays trainable, so GradientTape returns its gradient when
asked and apply_gradients updates (and decays) it when it is in the variable list handed over. The
reference semantics give a frozen parameter no gradient, so no optimizer moves it. Keras 2 (TF <= 2.15)
has no per-weight switch: a weight created with add_weight(trainable=False) is a non-trainable
tf.Variable, which the tape does not watch (None, not moved).

Upstream: https://github.com/tensorflow/tensorflow/issues/36349
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


class DenseFrozenKernel(keras.layers.Layer):  # Keras 2: one weight frozen at creation
    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", (input_shape[-1], 2), trainable=False)
        self.bias = self.add_weight("bias", (2,), initializer="zeros")
        super().build(input_shape)  # marks it built: else its first call builds new weights

    def call(self, x):
        return x @ self.kernel + self.bias


def step_with_frozen():
    """a frozen with the layer switch, b's kernel with the weight switch (Keras 3) or at creation (Keras 2);
    every weight handed to the tape and to the optimizer explicitly, as a user listing variables does."""
    keras.utils.set_random_seed(0)
    a = keras.layers.Dense(3)
    b = DenseFrozenKernel() if KERAS2 else keras.layers.Dense(2)
    a.build((None, 4))
    b.build((None, 3))
    a.trainable = False
    if not KERAS2:
        b.kernel.trainable = False
    params = [a.kernel, a.bias, b.kernel, b.bias]
    listed = [any(v is p for v in a.trainable_weights + b.trainable_weights) for p in params]
    # the tf.Variables behind the weights (Keras 2: the weights themselves): the tape watches the trainable ones
    backing = [bool((v if KERAS2 else v.value).trainable) for v in params]
    before = [np.asarray(v).copy() for v in params]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(b(a(tf.ones((8, 4)))) - 1.0))
    grads = tape.gradient(loss, params)
    keras.optimizers.SGD(0.1, weight_decay=0.05).apply_gradients(zip(grads, params))
    moved = [not np.array_equal(x, np.asarray(v)) for x, v in zip(before, params)]
    return listed, [g is not None for g in grads], moved, backing


def test_layer_frozen_with_the_layer_switch_gets_gradient_and_is_trained():
    listed, has_grad, moved, backing = step_with_frozen()
    print(f"a.trainable = False: a.kernel in trainable_weights {listed[0]}, its tf.Variable trainable {backing[0]}, "
          f"gradient {has_grad[0]}, updated {moved[0]} (a.bias: {listed[1]}, {backing[1]}, {has_grad[1]}, {moved[1]})")
    assert not listed[0] and not listed[1]  # out of the trainable collection...
    assert backing[0] and backing[1]  # ...the tf.Variables left trainable...
    assert has_grad[0] and moved[0] and has_grad[1] and moved[1]  # ...and still trained


def test_one_frozen_weight():
    listed, has_grad, moved, backing = step_with_frozen()
    how = "add_weight(trainable=False) (Keras 2)" if KERAS2 else "b.kernel.trainable = False (Keras 3)"
    print(f"{how}: b.kernel in trainable_weights {listed[2]}, its tf.Variable trainable {backing[2]}, "
          f"gradient {has_grad[2]}, updated {moved[2]}")
    assert not listed[2]
    if KERAS2:  # a non-trainable tf.Variable: no per-weight switch to test on Keras 2
        assert not backing[2] and not has_grad[2] and not moved[2]
    else:  # the per-weight switch leaves its tf.Variable trainable
        assert backing[2] and has_grad[2] and moved[2]


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_layer_frozen_with_the_layer_switch_gets_gradient_and_is_trained()
    test_one_frozen_weight()
    print("confirmed: frozen-still-trained")
