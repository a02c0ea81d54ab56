"""PaddlePaddle's high-level API: `paddle.Model(net).fit(data, callbacks=[AuditCallback()])` audits its first
training steps.

hapi trains in dygraph: each batch's update is `optimizer.minimize(loss)` (or the AMP scaler's, which calls it),
where the paddle probe reads the gradients (runners/paddle/audit.py). The probe goes on at on_train_begin, on the
Model's network and the optimizer `prepare` was handed; after `steps` batches it comes off.
"""
from __future__ import annotations

from paddle.callbacks import Callback

from . import Audited


class AuditCallback(Audited, Callback):
    """Audits the first `steps` training batches of Model.fit, then steps aside. `report` holds the findings;
    `verbose` prints them to stderr."""
    framework, inside = "paddle", "Model.fit"

    def on_train_begin(self, logs=None):
        self.model_type = type(self.model.network).__name__
        self.audit.start(self.model.network, self.model._optimizer)

    def on_train_batch_begin(self, step, logs=None):
        self.audit.before_step()

    def on_train_batch_end(self, step, logs=None):
        self.audit.after_step()

    def on_train_end(self, logs=None):
        self.audit.stop()
