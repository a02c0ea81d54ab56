"""Keras' decay exclusion by name on a subclassed model: AdamW with
`exclude_from_weight_decay(var_names=["layer_norm"])`, meant to exempt the LayerNormalization named
"layer_norm" from weight decay. Keras matches var_names against the name of the variable it decays
(re.search); in Keras 3 on TensorFlow that is the backing tf.Variable's name, which for a layer built
inside the model's call holds the model's scope and the weight's own name (`classifier/gamma:0`),
not the layer's: the exclusion exempts nothing and the norm is decayed (decay-exclusion-ineffective).
In Keras 2 (TF 2.15) the same variable is `classifier/layer_norm/gamma:0` and the exclusion works.

    python -m conformance audit examples/audit/tensorflow/decay_exclusion.py:build --framework tensorflow
"""
import keras
import numpy as np
import tensorflow as tf


class Classifier(keras.Model):
    def __init__(self, classes=4):
        super().__init__(name="classifier")
        self.hidden = keras.layers.Dense(16, activation="relu")
        self.norm = keras.layers.LayerNormalization(name="layer_norm")
        self.out = keras.layers.Dense(classes)

    def call(self, x):
        return self.out(self.norm(self.hidden(x)))


def build():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    features, labels = rng.normal(size=(8, 6)).astype("float32"), np.arange(8) % 4
    model = Classifier()
    model(features[:1])
    optimizer = keras.optimizers.AdamW(learning_rate=1e-3, weight_decay=0.01)
    optimizer.exclude_from_weight_decay(var_names=["layer_norm"])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(features, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    return {"model": model, "optimizer": optimizer, "step": step}
