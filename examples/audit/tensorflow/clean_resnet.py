"""A clean, realistic Keras model: a small ResNet of residual blocks (Conv2D + BatchNormalization,
a projection shortcut where the shape changes) held in a keras.Sequential, SGD with momentum and
weight decay, the usual GradientTape loop. Expected: no finding.

    python -m conformance audit examples/audit/tensorflow/clean_resnet.py:build --framework tensorflow
"""
import keras
import numpy as np
import tensorflow as tf


class Block(keras.layers.Layer):
    def __init__(self, cout, stride=1, project=False):
        super().__init__()
        self.conv1 = keras.layers.Conv2D(cout, 3, strides=stride, padding="same", use_bias=False)
        self.bn1 = keras.layers.BatchNormalization()
        self.conv2 = keras.layers.Conv2D(cout, 3, padding="same", use_bias=False)
        self.bn2 = keras.layers.BatchNormalization()
        self.shortcut = keras.Sequential([keras.layers.Conv2D(cout, 1, strides=stride, use_bias=False),
                                          keras.layers.BatchNormalization()]) if project else None

    def call(self, x, training=None):
        y = tf.nn.relu(self.bn1(self.conv1(x), training=training))
        y = self.bn2(self.conv2(y), training=training)
        return tf.nn.relu(y + (self.shortcut(x, training=training) if self.shortcut is not None else x))


class ResNet(keras.Model):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = keras.Sequential([keras.layers.Conv2D(16, 3, padding="same", use_bias=False),
                                      keras.layers.BatchNormalization(), keras.layers.ReLU()])
        self.stages = keras.Sequential([Block(16), Block(32, 2, project=True), Block(64, 2, project=True)])
        self.pool = keras.layers.GlobalAveragePooling2D()
        self.head = keras.layers.Dense(num_classes)

    def call(self, x, training=None):
        return self.head(self.pool(self.stages(self.stem(x, training=training), training=training)))


def build():
    keras.utils.set_random_seed(0)
    images = np.random.default_rng(0).normal(size=(8, 16, 16, 3)).astype("float32")
    labels = np.arange(8) % 10
    model = ResNet()
    model(images[:1])
    optimizer = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, weight_decay=5e-4)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    return {"model": model, "optimizer": optimizer, "step": step}
