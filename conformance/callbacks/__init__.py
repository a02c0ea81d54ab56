"""The audit where users already train: callbacks for the trainers that run the training loop themselves.
Each audits the first `steps` training steps (3 by default) as `conformance.audit` does, then steps aside;
the trainer's run is the same with or without it. Each module imports its framework:

    from conformance.callbacks.keras import AuditCallback      # model.fit(..., callbacks=[AuditCallback()])
    from conformance.callbacks.lightning import AuditCallback  # Trainer(callbacks=[AuditCallback()]).fit(module)
    from conformance.callbacks.hf import AuditCallback         # transformers.Trainer(..., callbacks=[AuditCallback()])
    from conformance.callbacks.paddle import AuditCallback     # paddle.Model(net).fit(data, callbacks=[AuditCallback()])
    from conformance.callbacks.mindspore import AuditCallback  # Model(net, loss, opt).train(n, data, callbacks=[...])

The callback's `report` holds the findings (conformance.auditor.AuditReport) once the audited steps ran. A
trainer the probe cannot read is said in one line: MindSpore in GRAPH_MODE raises when training begins, before its
first step; a Keras model fitted before (its train function traced without the probe) ends the audit after the
first step with the reason in `report.error`, and fit goes on.
"""
from __future__ import annotations

import sys

from ..auditor import DEFAULT_STEPS, AuditReport, StepAudit


class Audited:
    """What the callbacks share: the audit their trainer's events drive (`audit`), its `report`, and printing it to
    stderr, as `python -m conformance audit` does, when `verbose`. A callback names its `framework` and the
    trainer's call (`inside`), and sets `model_type` when training begins."""
    framework = ""
    inside = ""

    def __init__(self, steps: int = DEFAULT_STEPS, verbose: bool = True):
        super().__init__()
        self.verbose = verbose
        self.audit = StepAudit(self.framework, steps, on_report=self._reported)
        self.model_type = ""

    @property
    def report(self) -> AuditReport | None:
        return self.audit.report

    def _reported(self, report: AuditReport) -> None:
        if self.verbose:
            from ..auditor.cli import document, table
            doc = document(f"{self.model_type} in {self.inside}", self.framework, self.audit.steps, report, [],
                           report.error)
            print(table(doc), file=sys.stderr)
