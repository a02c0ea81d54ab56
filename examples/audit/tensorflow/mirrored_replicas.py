"""Data parallelism: a MirroredStrategy over this host's CPU, the model made and compiled in its scope and trained
by fit, which splits each batch over the replicas (Keras' distributed training guide). `audit --replicas 2` gives
the audited process two logical CPU devices before this code runs, as the strategy's replicas:

    python -m conformance audit examples/audit/tensorflow/mirrored_replicas.py:build --framework tensorflow --replicas 2

A BatchNormalization between two layers: the strategy combines the gradients, so every replica's copy of a weight
stays equal, and each replica updates its copy of the moving statistics with its own rows
(replica-statistics-differ); reading the variable gives one replica's copy (Keras 3) or their mean (Keras 2).
"""
import numpy as np

import keras
import tensorflow as tf


def build():
    strategy = tf.distribute.MirroredStrategy([device.name for device in tf.config.list_logical_devices("CPU")])
    keras.utils.set_random_seed(0)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.BatchNormalization(),
                                  keras.layers.Dense(2)])
        optimizer = keras.optimizers.SGD(0.1)
        model.compile(optimizer, loss="mse")
    data = np.random.default_rng(0).standard_normal((16, 6)).astype(np.float32)

    def step():
        model.fit(data[:, :4], data[:, 4:], batch_size=16, epochs=1, shuffle=False, verbose=0)

    return {"model": model, "optimizer": optimizer, "step": step}
