"""Seed 1 (a Paddle report) in Keras: a CIFAR net whose call uses conv1 on even batches and conv2 on
odd ones, trained with SGD and weight decay (Keras' weight_decay, decoupled), the loop taking the
gradient of model.trainable_variables. The branch left out of a step gets None from tape.gradient,
and Keras' optimizer drops a (None, variable) pair before anything, its weight decay included: the
unused branch does not move, unlike Paddle's. Both branches train in turn, so no finding.

    python -m conformance audit examples/audit/tensorflow/seed1_unused_branch.py:build --framework tensorflow
"""
import keras
import numpy as np
import tensorflow as tf


class CIFAR(keras.Model):
    def __init__(self):
        super().__init__()
        self.conv1 = keras.layers.Conv2D(8, 3, padding="same")
        self.conv2 = keras.layers.Conv2D(8, 3, padding="same")
        self.pool = keras.layers.GlobalAveragePooling2D()
        self.fc = keras.layers.Dense(10)

    def build(self, input_shape):  # both branches, whichever the first call takes
        self.conv1.build(input_shape)
        self.conv2.build(input_shape)
        self.fc.build((None, 8))

    def call(self, x, ind=0):
        x = self.conv1(x) if ind % 2 == 0 else self.conv2(x)
        return self.fc(self.pool(x))


def build():
    keras.utils.set_random_seed(0)
    images = np.random.default_rng(0).normal(size=(4, 16, 16, 3)).astype("float32")
    labels = np.array([0, 1, 2, 3])
    model = CIFAR()
    model(images[:1])  # builds the model: CIFAR.build builds both branches
    optimizer = keras.optimizers.SGD(learning_rate=0.1, weight_decay=5e-4)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    batch = [0]

    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, ind=batch[0], training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        batch[0] += 1

    return {"model": model, "optimizer": optimizer, "step": step}
