"""Keras `fit`: `model.fit(x, y, callbacks=[AuditCallback()])` audits its first training steps.

The probe goes on at on_train_begin, after fit made its train function and before it traces it: fit's first
call traces the step with the probe's wrapper, which in a traced step only counts, in variables of its own,
which variables got a gradient (runners/tensorflow/audit.py). After `steps` steps the wrapper comes off and fit
goes on with the function it traced; its counting ops write only the probe's variables, so the weights are
those fit gives without the callback.
"""
from __future__ import annotations

from ..runners.tensorflow.runner import keras  # Keras 3, or Keras 2 on TF 2.15: the one TF's fit uses
from . import Audited


class AuditCallback(Audited, keras.callbacks.Callback):
    """Audits the first `steps` training steps of fit (a fit's batch: `steps_per_execution` steps of the
    optimizer, if more than one), then steps aside. `report` holds the findings; `verbose` prints them to
    stderr."""
    framework, inside = "tensorflow", "fit"

    def on_train_begin(self, logs=None):
        self.model_type = type(self.model).__name__
        self.audit.start(self.model, self.model.optimizer)

    def on_train_batch_begin(self, batch, logs=None):
        self.audit.before_step()

    def on_train_batch_end(self, batch, logs=None):
        self.audit.after_step()

    def on_train_end(self, logs=None):
        self.audit.stop()
