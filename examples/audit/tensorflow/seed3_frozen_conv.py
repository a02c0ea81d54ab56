"""Seed 3 (a MindSpore article) in Keras: a conv net whose conv1 is kept from training, in the Keras
ways. Each function is one audit target:

    python -m conformance audit examples/audit/tensorflow/seed3_frozen_conv.py:stop_gradient --framework tensorflow

- stop_gradient: conv1's output goes through tf.stop_gradient. tape.gradient returns None for conv1's
  kernel, which the loop hands the optimizer with the rest: it gets no gradient (no-gradient) and,
  SGD without decay, stays put.
- requires_grad_false: conv1.trainable = False (Keras' switch), the loop handing the optimizer
  model.trainable_variables: conv1's kernel is not among them and stays put. No finding.
- freeze_after_warmup: conv1 trains for one step, then conv1.trainable = False; SGD has momentum.
  The optimizer was built with conv1's kernel, but the loop hands it model.trainable_variables as they
  are at each step, so the momentum of the warm-up step never reaches the frozen kernel (unlike
  torch, where it keeps moving it). No finding.
- frozen_in_a_fixed_list: as requires_grad_false, but the loop's variable list was taken once, before
  the freeze, as `variables = model.trainable_variables`. trainable = False only takes the kernel out
  of model.trainable_weights: the tape still differentiates it and the optimizer updates it
  (frozen-but-moved, tensorflow#36349).
"""
import keras
import numpy as np
import tensorflow as tf


class ConvNet(keras.Model):
    def __init__(self, detach=False):
        super().__init__()
        self.detach = detach
        self.conv1 = keras.layers.Conv2D(6, 4, use_bias=False)
        self.conv2 = keras.layers.Conv2D(2, 2)
        self.conv3 = keras.layers.Conv2D(6, 2)

    def call(self, x):
        x = self.conv1(x)
        if self.detach:
            x = tf.stop_gradient(x)
        return self.conv3(self.conv2(x))


def _model(detach=False):
    keras.utils.set_random_seed(0)
    model = ConvNet(detach)
    model(np.ones((1, 32, 32, 1), "float32"))
    return model


def _target(model, optimizer, variables=None):
    images = np.ones((1, 32, 32, 1), "float32")
    target = np.zeros((1, 27, 27, 6), "float32")

    def step():
        held = model.trainable_variables if variables is None else variables
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(images) - target))
        grads = tape.gradient(loss, held)
        optimizer.apply_gradients(zip(grads, held))

    return {"model": model, "optimizer": optimizer, "step": step}


def stop_gradient():
    return _target(_model(detach=True), keras.optimizers.SGD(learning_rate=0.01))


def requires_grad_false():
    model = _model()
    model.conv1.trainable = False
    return _target(model, keras.optimizers.SGD(learning_rate=0.01))


def freeze_after_warmup():
    model = _model()
    built = _target(model, keras.optimizers.SGD(learning_rate=0.01, momentum=0.9))
    built["step"]()  # the warm-up step, conv1 still training
    model.conv1.trainable = False
    return built


def frozen_in_a_fixed_list():
    model = _model()
    variables = model.trainable_variables  # taken once, conv1's kernel among them
    model.conv1.trainable = False
    return _target(model, keras.optimizers.SGD(learning_rate=0.01), variables)
