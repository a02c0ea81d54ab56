"""Seed 4 (a Paddle Fluid report) in Keras: a conv + BatchNormalization net trained with weight
decay (the optimizer's, decoupled) and L2 kernel regularizers. Keras keeps BatchNormalization's
moving_mean and moving_variance as non-trainable weights, outside model.trainable_variables, which is
what the loop hands the optimizer: neither the decay nor a regularizer reaches them. No finding.

    python -m conformance audit examples/audit/tensorflow/seed4_batchnorm_decay.py:build --framework tensorflow
"""
import keras
import numpy as np
import tensorflow as tf


def build():
    keras.utils.set_random_seed(0)
    l2 = keras.regularizers.L2(5e-5)
    model = keras.Sequential([
        keras.layers.Conv2D(8, 3, padding="same", kernel_regularizer=l2),
        keras.layers.BatchNormalization(),
        keras.layers.ReLU(),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10, kernel_regularizer=l2),
    ])
    images = np.random.default_rng(0).normal(size=(8, 8, 8, 3)).astype("float32")
    labels = np.arange(8) % 10
    model(images[:1])
    optimizer = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, weight_decay=5e-5)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True)) + tf.add_n(model.losses)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    return {"model": model, "optimizer": optimizer, "step": step}
