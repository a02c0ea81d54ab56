"""The seed reports in their original shape: seed 1's user code written by hand as a Keras custom loop
equals the adapter's run of it, and seed 5 reproduces in the closest form to its original report that
TF 2 allows, agreeing with the suite's record of the seed case."""
import warnings

import numpy as np

from conformance.engine.scenario import batch, initial_values, observe
from conformance.runners.tensorflow.runner import TensorFlowRunner

from .common import SPEC, dense, keras, load, record, tf


def test_seed_1_through_the_adapter_equals_a_hand_written_training_loop():
    """seed-1 (decay and an unused layer): two Dense layers, SGD with momentum and weight decay, the
    second step's forward skipping the first layer, written as a Keras custom loop."""
    case = SPEC["seed-1-decay-moves-unused-layer[momentum]"].case
    obs = observe(TensorFlowRunner(), case)

    first, second = dense(4, 4), dense(2, 4)
    load({"first": first, "second": second}, initial_values(case))
    variables = first.trainable_variables + second.trainable_variables
    opt = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, weight_decay=0.0005)
    for index, path in enumerate([[first, second], [second]]):
        x, t = batch(case, index, case.steps[index].path)
        with tf.GradientTape() as tape:
            y = tf.constant(x)
            for layer in path:
                y = layer(y, training=True)
            loss = tf.reduce_mean(tf.square(y - t))
        grads = tape.gradient(loss, variables)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Gradients do not exist" for `first` in step 2
            opt.apply_gradients(zip(grads, variables))
        assert obs.steps[index].loss == float(loss)
    np.testing.assert_array_equal(obs.steps[-1].values["first.weight"], first.kernel.numpy())
    np.testing.assert_array_equal(obs.steps[-1].values["second.weight"], second.kernel.numpy())


class Agent(keras.Model):
    """tensorflow#26404 / seed 5 in TF 2: a BatchNormalization created next to the one on the loss
    path; gradients taken with tf.gradients inside a tf.function graph over the layer collections."""

    def __init__(self):
        super().__init__()
        self.layer1 = keras.layers.Dense(4)
        self.bn_unused = keras.layers.BatchNormalization()  # built, never called
        self.bn_used = keras.layers.BatchNormalization()
        self.action = keras.layers.Dense(2)

    def build(self, input_shape):
        self.layer1.build(input_shape)
        for layer in (self.bn_unused, self.bn_used, self.action):
            layer.build((None, 4))

    def call(self, x, training=False):
        return self.action(self.bn_used(self.layer1(x), training=training))


def test_seed_5_original_shape():
    keras.utils.set_random_seed(0)
    model = Agent()
    # a first call builds it (Agent.build, bn_unused included); Keras 2 marks a subclassed model
    # built only then: after a bare model.build(shape) it refuses model.variables
    model(tf.zeros((1, 4)))

    @tf.function
    def gradients(x, target):
        loss = tf.reduce_mean(tf.square(model(x, training=True) - target))
        return tf.gradients(loss, model.variables)  # every collected variable, statistics included

    x, target = tf.random.normal((8, 4)), tf.random.normal((8, 2))
    label = {id(getattr(layer, role)): f"{name}.{role}" for name, layer in
             (("layer1", model.layer1), ("action", model.action)) for role in ("kernel", "bias")}
    label |= {id(getattr(layer, role)): f"{name}.{role}" for name, layer in
              (("bn_unused", model.bn_unused), ("bn_used", model.bn_used))
              for role in ("gamma", "beta", "moving_mean", "moving_variance")}
    grads = {label[id(v)]: g for v, g in zip(model.variables, gradients(x, target))}
    assert len(grads) == 12
    none = {name for name, g in grads.items() if g is None}
    # the unused BatchNormalization gets None, no error; statistics are never differentiated
    assert none == {"bn_unused.gamma", "bn_unused.beta", "bn_unused.moving_mean", "bn_unused.moving_variance",
                    "bn_used.moving_mean", "bn_used.moving_variance"}
    # the used BatchNormalization passes gradient upstream, to layer1's kernel
    assert np.any(grads["layer1.kernel"].numpy()) and np.any(grads["bn_used.gamma"].numpy())
    # trainable_variables (the fix in the issue) still holds the unused gamma/beta: None there too
    assert len(model.trainable_variables) == 8

    got = record("seed-5-unused-bn-grad")
    observed = {(c.check.split(" @")[0], c.expected): c.observed for c in got.checks}
    assert got.verdict == "conform"
    assert observed["grad bn_unused.weight", "none_or_zero"] == observed["grad bn_unused.bias", "none_or_zero"] == "none"
    assert observed["grad layer1.weight", "nonzero"].startswith("nonzero")
    assert observed["grad bn_used.weight", "nonzero"].startswith("nonzero")
