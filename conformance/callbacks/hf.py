"""Hugging Face's Trainer: `Trainer(..., callbacks=[AuditCallback()])` audits its first training steps.

The probe goes on at on_train_begin, once the Trainer has built its optimizer (the torch optimizer inside
Accelerate's wrapper is the one probed); on_step_begin and on_step_end bound each optimization step (all the
batches of a gradient accumulation). After `steps` steps the probe comes off.
"""
from __future__ import annotations

import sys

from transformers import TrainerCallback

from ..auditor import DEFAULT_STEPS, AuditReport, StepAudit
from ..auditor.cli import document, table


class AuditCallback(TrainerCallback):
    """Audits the first `steps` optimization steps of Trainer.train, then steps aside. `report` holds the
    findings; `verbose` prints them to stderr as `python -m conformance audit` does."""

    def __init__(self, steps: int = DEFAULT_STEPS, verbose: bool = True):
        self.verbose = verbose
        self.audit = StepAudit("torch", steps, on_report=self._reported)
        self._model = ""

    @property
    def report(self) -> AuditReport | None:
        return self.audit.report

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        self._model = type(model).__name__
        self.audit.start(model, getattr(optimizer, "optimizer", optimizer))  # Accelerate wraps the torch optimizer

    def on_step_begin(self, args, state, control, **kwargs):
        self.audit.before_step()

    def on_step_end(self, args, state, control, **kwargs):
        self.audit.after_step()

    def on_train_end(self, args, state, control, **kwargs):
        self.audit.stop()

    def _reported(self, report: AuditReport) -> None:
        if self.verbose:
            doc = document(f"{self._model} in Trainer.train", "torch", self.audit.steps, report, [], report.error)
            print(table(doc), file=sys.stderr)
