"""Hugging Face's Trainer: `Trainer(..., callbacks=[AuditCallback()])` audits its first training steps.

The probe goes on at on_train_begin, once the Trainer has built its optimizer (the torch optimizer inside
Accelerate's wrapper is the one probed); on_step_begin and on_step_end bound each optimization step (all the
batches of a gradient accumulation). After `steps` steps the probe comes off.
"""
from __future__ import annotations

from transformers import TrainerCallback

from . import Audited


class AuditCallback(Audited, TrainerCallback):
    """Audits the first `steps` optimization steps of Trainer.train, then steps aside. `report` holds the
    findings; `verbose` prints them to stderr."""
    framework, inside = "torch", "Trainer.train"

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        self.model_type = type(model).__name__
        self.audit.start(model, getattr(optimizer, "optimizer", optimizer))  # Accelerate wraps the torch optimizer

    def on_step_begin(self, args, state, control, **kwargs):
        self.audit.before_step()

    def on_step_end(self, args, state, control, **kwargs):
        self.audit.after_step()

    def on_train_end(self, args, state, control, **kwargs):
        self.audit.stop()
