"""Run spec instances on one adapter and turn each into a CaseRecord with its verdict."""
from __future__ import annotations

import time
import traceback
from typing import Callable, Iterable

from .reference import ReferenceRunner
from .results import CaseRecord, CheckRecord, Documented
from .runners.base import Runner, Unsupported
from .scenario import observe
from .schema import Instance, KnownDivergence
from .verdict import documented_by, evaluate, failure_summary


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" (at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {text[-1] if text else ''}{at}"


def run_instance(runner: Runner, instance: Instance, version: str,
                 known: list[KnownDivergence]) -> CaseRecord:
    case = instance.case
    record = dict(id=instance.id, base_id=case.id, topic=instance.topic, title=case.title,
                  references=[str(r) for r in case.references], axes=instance.axes,
                  source=instance.source)
    start = time.perf_counter()
    try:
        reference = observe(ReferenceRunner(), case)
    except Exception as exc:  # a suite bug, not a framework finding
        return CaseRecord(**record, verdict="error", reason=f"reference oracle failed: {_one_line(exc)}",
                          duration_s=time.perf_counter() - start)
    try:
        observed = observe(runner, case)
    except Unsupported as exc:
        return CaseRecord(**record, verdict="unsupported", reason=str(exc),
                          duration_s=time.perf_counter() - start)
    except Exception as exc:
        return CaseRecord(**record, verdict="error", reason=_one_line(exc),
                          duration_s=time.perf_counter() - start)
    checks = evaluate(instance, observed, reference)
    held = all(c.held for c in checks)
    entry = None if held else documented_by(instance.id, version, known)
    return CaseRecord(**record, verdict="conform" if held else "divergence",
                      reason=None if held else failure_summary(checks),
                      documented=Documented(reason=entry.reason, link=str(entry.link)) if entry else None,
                      checks=[CheckRecord(**vars(c)) for c in checks],
                      duration_s=time.perf_counter() - start)


def run_all(runner: Runner, instances: Iterable[Instance], version: str, known: list[KnownDivergence],
            on_result: Callable[[CaseRecord], None]) -> None:
    for instance in instances:
        on_result(run_instance(runner, instance, version, known))
