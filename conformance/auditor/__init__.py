"""The audit of a user's own model: `conformance.audit(model, optimizer, step, framework=...)` in Python,
`python -m conformance audit FILE.py:FUNC --framework F` on the command line (auditor/cli.py).

The user's step runs as it is, `steps` times; the room's probe (runners/<fw>/audit.py) reads what it
did (observe.py), and framework-neutral rules turn that into findings (findings.py, kinds.py).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Optional

from .findings import Finding, analyse, explain, step_problem
from .kinds import KINDS
from .observe import AuditInputError, Inventory, Probe, StepObservation, StepWatch, observe_step

DEFAULT_STEPS = 3


class AuditError(Exception):
    """The audit could not finish: the user's step raised, or says nothing about training. One line."""


@dataclass
class AuditReport:
    inventory: Inventory
    steps: list[StepObservation] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: Optional[str] = None

    def kinds(self) -> dict[str, list[str]]:
        """{kind: [subject, ...]}: the findings in brief, for a user's own assertions."""
        out: dict[str, list[str]] = {}
        for finding in self.findings:
            out.setdefault(finding.kind, []).append(finding.subject)
        return out


def probe_class(framework: str) -> type[Probe]:
    """The room's probe class; AuditInputError naming what is missing."""
    from ..runners import ROOMS, room
    if framework not in ROOMS:
        raise AuditInputError(f"unknown framework {framework!r}; choose from {', '.join(ROOMS)}")
    path = getattr(room(framework), "AUDIT", None)
    if path is None:
        raise AuditInputError(f"the {framework} room has no audit probe yet")
    module_name, class_name = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise AuditInputError(f"{framework} is not installed in this environment ({exc.name} missing)") from None
    return getattr(module, class_name)


def report(inventory: Inventory, steps: list[StepObservation], error: Optional[str] = None) -> AuditReport:
    """Findings and notes from what was observed (so far, if error says why it stopped)."""
    findings, notes = analyse(inventory, steps)
    explain(findings, inventory.framework, inventory.version)
    return AuditReport(inventory=inventory, steps=steps, findings=findings, notes=notes, error=error)


def audit(model, optimizer, step: Callable[[], object], framework: str, steps: int = DEFAULT_STEPS,
          on_step: Optional[Callable[[StepObservation], None]] = None) -> AuditReport:
    """Run `step` (one training step exactly as the user's loop runs it) `steps` times on `model` and
    `optimizer`, and return the findings. The step's own exception propagates as AuditError (one
    line, the cause chained) after the probe is removed; the model keeps the steps it took."""
    if not callable(step):
        raise AuditInputError(f"step is a {type(step).__name__}, not a callable")
    if not isinstance(steps, int) or steps < 1:
        raise AuditInputError(f"steps must be a whole number from 1, not {steps!r}")
    probe = probe_class(framework)(model, optimizer)
    inventory = probe.inventory()
    observed: list[StepObservation] = []
    probe.install()
    try:
        for index in range(steps):
            try:
                obs = observe_step(probe, step, index, inventory)
            except AuditInputError as exc:  # the step ran; the probe cannot read what it did
                raise AuditError(f"step {index + 1} of {steps}: {exc}") from exc
            except Exception as exc:
                raise AuditError(f"step {index + 1} of {steps} raised {type(exc).__name__}: "
                                 f"{_first_line(exc)}") from exc
            observed.append(obs)
            if on_step is not None:
                on_step(obs)
    finally:
        probe.uninstall()
    result = report(inventory, observed)
    result.error = step_problem(observed)
    return result


class StepAudit:
    """The audit of the first `steps` steps of a training loop another library runs (its callbacks drive this):
    start(model, optimizer) once the trainer holds both, before_step() and after_step() around each of its
    steps. After `steps` steps, or at stop() (the training ended first), the probe comes off, `report` holds
    the findings and on_report(report) is called; the steps after run as they would without the audit. A second
    start() (fit called again) audits nothing more."""

    def __init__(self, framework: str, steps: int = DEFAULT_STEPS,
                 on_report: Optional[Callable[["AuditReport"], None]] = None):
        if not isinstance(steps, int) or steps < 1:
            raise AuditInputError(f"steps must be a whole number from 1, not {steps!r}")
        self.framework, self.steps, self.on_report = framework, steps, on_report
        self.report: Optional[AuditReport] = None
        self._probe: Optional[Probe] = None
        self._watch: Optional[StepWatch] = None
        self._observed: list[StepObservation] = []

    def start(self, model, optimizer) -> None:
        if self._probe is not None or self.report is not None:
            return
        probe = probe_class(self.framework)(model, optimizer)
        self._inventory = probe.inventory()
        probe.install()
        self._probe = probe

    def before_step(self) -> None:
        if self._probe is not None and self._watch is None:
            self._watch = StepWatch(self._probe, len(self._observed), self._inventory)

    def after_step(self) -> None:
        if self._watch is None:
            return
        watch, self._watch = self._watch, None
        try:
            self._observed.append(watch.end())
        except AuditInputError as exc:  # the step ran; the probe cannot read what it did
            self._finish(f"step {len(self._observed) + 1} of {self.steps}: {exc}")
            return
        if len(self._observed) >= self.steps:
            self._finish()

    def stop(self) -> None:
        if self._probe is not None:
            self._finish()

    def _finish(self, error: Optional[str] = None) -> None:
        probe, self._probe, self._watch = self._probe, None, None
        probe.uninstall()
        self.report = report(self._inventory, self._observed)
        self.report.error = error or step_problem(self._observed)
        if self.on_report is not None:
            self.on_report(self.report)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:500] if lines else ""


__all__ = ["AuditError", "AuditInputError", "AuditReport", "Finding", "KINDS", "StepAudit", "audit", "probe_class",
           "report"]
