"""The audit inside Keras' fit: seed 5's actor (a BatchNormalization whose output is discarded) compiled and
fitted with a callback that audits the first 3 steps and prints the findings, then steps aside.

    python examples/audit/tensorflow/keras_fit_callback.py
"""
import keras

from conformance.callbacks.keras import AuditCallback
from seed5_unused_batchnorm import Actor, _data


class Clean(keras.Model):
    """The same data through a BatchNormalization that the loss uses."""

    def __init__(self):
        super().__init__()
        self.norm = keras.layers.BatchNormalization()
        self.dense = keras.layers.Dense(2)

    def call(self, x, training=None):
        return self.dense(self.norm(x, training=training))


def train(callbacks, model_class=Actor, epochs=6) -> keras.Model:
    """The model compiled and fitted on seed 5's data, 2 batches an epoch."""
    states, actions = _data()
    model = model_class()
    model(states[:2])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=1e-2, momentum=0.9), loss="mse")
    model.fit(states, actions, batch_size=8, epochs=epochs, callbacks=callbacks, verbose=0, shuffle=False)
    return model


if __name__ == "__main__":
    train([AuditCallback(steps=3)])  # prints the findings after the 3rd step
