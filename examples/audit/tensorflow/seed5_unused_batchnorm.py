"""Seed 5 (a TensorFlow question) in TF 2 / Keras: an actor network whose layer normalises its input
with a BatchNormalization whose output is then discarded (the report's first
`BatchNormalization()(layer_input, training=True)` call), next to the BatchNormalization on the loss
path; SGD with momentum (the report's MomentumOptimizer). The discarded one's gamma and beta get
None from tape.gradient: BatchNormalization does not block backprop, the loss simply does not depend
on them (no-gradient). Keras' optimizer drops the None pairs, with a "Gradients do not exist" warning.

- build: the custom loop, tape.gradient over model.trainable_variables, then apply_gradients.
- fit: the same model compiled, one train_on_batch per step (Keras' own traced train function).

    python -m conformance audit examples/audit/tensorflow/seed5_unused_batchnorm.py:build --framework tensorflow
    python -m conformance audit examples/audit/tensorflow/seed5_unused_batchnorm.py:fit --framework tensorflow
"""
import keras
import numpy as np
import tensorflow as tf


class Actor(keras.Model):
    def __init__(self, hidden=32, n_out=2):
        super().__init__()
        self.input_norm = keras.layers.BatchNormalization()   # its output is discarded in call
        self.layer_1 = keras.layers.Dense(hidden)
        self.norm_1 = keras.layers.BatchNormalization()
        self.dropout = keras.layers.Dropout(0.1)
        self.action = keras.layers.Dense(n_out)

    def call(self, x, training=None):
        self.input_norm(x, training=training)  # computed, then not used
        y = tf.nn.leaky_relu(self.norm_1(self.layer_1(x), training=training))
        return self.action(self.dropout(y, training=training))


def _data():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    return rng.normal(size=(16, 4)).astype("float32"), rng.normal(size=(16, 2)).astype("float32")


def build():
    states, actions = _data()
    model = Actor()
    model(states[:2])  # builds every layer
    optimizer = keras.optimizers.SGD(learning_rate=1e-2, momentum=0.9)

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(states, training=True) - actions))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    return {"model": model, "optimizer": optimizer, "step": step}


def fit():
    states, actions = _data()
    model = Actor()
    model(states[:2])
    optimizer = keras.optimizers.SGD(learning_rate=1e-2, momentum=0.9)
    model.compile(optimizer=optimizer, loss="mse")

    def step():
        model.train_on_batch(states, actions)

    return {"model": model, "optimizer": optimizer, "step": step}
