"""Seed 2 (a Paddle report) in Keras: a ResNet whose residual blocks sit in a plain Python list inside a
hand-written Sequential layer. Keras tracks a layer assigned as an attribute, and in a list, dict or
tuple it is assigned (wrapped in its own tracking list), so model.trainable_variables holds every
block: unlike Paddle and torch, nothing is missed and there is no finding.

    python -m conformance audit examples/audit/tensorflow/seed2_plain_list_resnet.py:build --framework tensorflow
"""
import keras
import numpy as np
import tensorflow as tf


class Sequential(keras.layers.Layer):
    def __init__(self, layers: list):
        super().__init__()
        self.layers = layers  # a plain list: Keras tracks it

    def call(self, x, training=None):
        for layer in self.layers:
            x = layer(x, training=training)
        return x


class Residual(keras.layers.Layer):
    def __init__(self, out_channels, use_1x1_conv=False, stride=1):
        super().__init__()
        self.conv1 = keras.layers.Conv2D(out_channels, 3, padding="same", strides=stride)
        self.conv2 = keras.layers.Conv2D(out_channels, 3, padding="same")
        self.conv3 = keras.layers.Conv2D(out_channels, 1, strides=stride) if use_1x1_conv else None
        self.bn1 = keras.layers.BatchNormalization()
        self.bn2 = keras.layers.BatchNormalization()

    def call(self, x, training=None):
        y = tf.nn.relu(self.bn1(self.conv1(x), training=training))
        y = self.bn2(self.conv2(y), training=training)
        if self.conv3 is not None:
            x = self.conv3(x)
        return tf.nn.relu(y + x)


def resnet_block(out_channels, num_residuals, first_block=False):
    blk = []
    for i in range(num_residuals):
        if i == 0 and not first_block:
            blk.append(Residual(out_channels, use_1x1_conv=True, stride=2))
        else:
            blk.append(Residual(out_channels))
    return Sequential(blk)


class ResNet(keras.Model):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = keras.Sequential([keras.layers.Conv2D(8, 3, padding="same"),
                                      keras.layers.BatchNormalization(), keras.layers.ReLU()])
        self.block1 = resnet_block(8, 2, first_block=True)
        self.block2 = resnet_block(16, 2)
        self.pool = keras.layers.GlobalAveragePooling2D()
        self.fc = keras.layers.Dense(num_classes)

    def call(self, x, training=None):
        x = self.block2(self.block1(self.stem(x, training=training), training=training), training=training)
        return self.fc(self.pool(x))


def build():
    keras.utils.set_random_seed(0)
    images = np.random.default_rng(0).normal(size=(8, 16, 16, 1)).astype("float32")
    labels = np.arange(8) % 10
    model = ResNet()
    model(images[:1])
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    return {"model": model, "optimizer": optimizer, "step": step}
