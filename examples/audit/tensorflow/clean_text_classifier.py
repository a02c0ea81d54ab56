"""A clean, realistic Keras model: embedding + LayerNormalization + dropout text classifier, AdamW
with the usual exemption of biases and the norm's gamma and beta from weight decay, by the weights'
own names (which Keras 2 and 3 both keep in the variable name it matches). Expected: no finding.

    python -m conformance audit examples/audit/tensorflow/clean_text_classifier.py:build --framework tensorflow
"""
import keras
import numpy as np
import tensorflow as tf


class TextClassifier(keras.Model):
    def __init__(self, vocab=100, dim=32, classes=4):
        super().__init__()
        self.embedding = keras.layers.Embedding(vocab, dim)
        self.norm = keras.layers.LayerNormalization()
        self.dropout = keras.layers.Dropout(0.1)
        self.hidden = keras.layers.Dense(dim, activation="relu")
        self.out = keras.layers.Dense(classes)

    def call(self, tokens, training=None):
        x = self.dropout(self.norm(tf.reduce_mean(self.embedding(tokens), axis=1)), training=training)
        return self.out(self.hidden(x))


def build():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    tokens, labels = rng.integers(1, 100, size=(8, 12)), np.arange(8) % 4
    model = TextClassifier()
    model(tokens[:1])
    optimizer = keras.optimizers.AdamW(learning_rate=1e-3, weight_decay=0.01)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(tokens, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    return {"model": model, "optimizer": optimizer, "step": step}
