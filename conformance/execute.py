"""Run spec instances on an adapter and turn each into a CaseRecord with its verdict.

A framework runs in one worker process for all its cases, so its import is paid once. A case that
segfaults, aborts, exits or hangs takes only its worker down: the case becomes `error` with a
one-line reason and a fresh worker carries on with the rest. The reference oracle runs in the
parent meanwhile, on the other core.
"""
from __future__ import annotations

import multiprocessing
import signal
import time
import traceback
from multiprocessing.connection import wait
from typing import Callable, Iterable

from .reference import ReferenceRunner
from .results import CaseRecord, CheckRecord, Explanation, VariantRecord
from .runners import FrameworkMissing, Unavailable, load_adapter
from .runners.base import Runner, Unsupported
from .scenario import Observation, observe
from .schema import Case, Instance, KnownVariant
from .verdict import evaluate, failure_summary, unexplained

DEFAULT_TIMEOUT = 30.0  # seconds per case; a case's `timeout` or --timeout overrides it
STARTUP_TIMEOUT = 300.0  # importing a framework can take long on a cold disk


class WorkerFailed(Exception):
    """The worker could not start; the message is one line."""


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" (at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {text[-1] if text else ''}{at}"


def observe_safely(runner: Runner, case: Case) -> tuple[str, object]:
    """('ok', Observation) | ('unsupported', why) | ('error', one line)."""
    try:
        return "ok", observe(runner, case)
    except Unsupported as exc:
        return "unsupported", str(exc)
    except Exception as exc:
        return "error", one_line(exc)


def explain(instance: Instance, obs: Observation, profile: list[KnownVariant]) -> tuple[list[KnownVariant], str | None]:
    """Run the oracle under the profile's variants. When it reproduces every checked observation of
    `obs`: (the variants it needed, None), found by dropping, one at a time, each variant whose removal
    keeps the match, so every one named is needed. Otherwise: ([], the first check it does not explain)."""
    def miss(variants) -> str | None:
        model = observe_safely(ReferenceRunner(variants=[v.variant for v in variants]), instance.case)
        if model[0] != "ok":
            return f"the variant oracle failed: {model[1]}"
        check = unexplained(instance, obs, model[1])
        return None if check is None else f"{check.check}: observed {check.observed}, variant oracle expects otherwise"

    first = miss(profile)
    if first is not None:
        return [], first
    needed = list(profile)
    for variant in list(needed):
        trial = [v for v in needed if v is not variant]
        if miss(trial) is None:
            needed = trial
    return needed, None


def judge(instance: Instance, outcome: tuple[str, object], reference: Observation | str,
          profile: list[KnownVariant], duration: float) -> CaseRecord:
    """The record of one instance: its checks against the spec, and for a divergence whether the
    oracle under the framework's profile (its variants for this version) reproduces it."""
    case = instance.case
    record = dict(id=instance.id, base_id=case.id, topic=instance.topic, title=case.title,
                  references=[str(r) for r in case.references], axes=instance.axes,
                  source=instance.source, duration_s=duration)
    kind, payload = outcome
    if isinstance(reference, str):  # a suite bug, not a framework finding
        return CaseRecord(**record, verdict="error", reason=f"reference oracle failed: {reference}")
    if kind != "ok":
        return CaseRecord(**record, verdict=kind, reason=payload)
    checks = evaluate(instance, payload, reference)
    held = all(c.held for c in checks)
    checks_kept = [CheckRecord(**vars(c)) for c in checks]
    if held:  # the profile must not predict a divergence that did not happen
        _, miss = explain(instance, payload, profile) if profile else ([], None)
        return CaseRecord(**record, verdict="conform", unexplained=miss, checks=checks_kept)
    needed, miss = explain(instance, payload, profile)
    explanation = Explanation(variants=[VariantRecord.of(v) for v in needed]) if needed else None
    documented = explanation is not None and all(v.link is not None for v in needed)
    return CaseRecord(**record, verdict="divergence", reason=failure_summary(checks),
                      documented=explanation if documented else None,
                      explained_by=None if documented else explanation,
                      unexplained=miss, checks=checks_kept)


def reference_of(case: Case) -> Observation | str:
    """The oracle's observation, or the one-line error that stopped it."""
    return observe_safely(ReferenceRunner(), case)[1]


def run_instance(runner: Runner, instance: Instance, profile: list[KnownVariant]) -> CaseRecord:
    """In-process run of one instance (for in-memory adapters and tests: no crash isolation)."""
    start = time.perf_counter()
    reference = reference_of(instance.case)
    outcome = observe_safely(runner, instance.case)
    return judge(instance, outcome, reference, profile, time.perf_counter() - start)


# ---------------------------------------------------------------- the worker process
def _worker_main(conn, framework: str, path: str, device: str, mode: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    import faulthandler
    faulthandler.enable()  # a native crash leaves a Python traceback on stderr
    try:
        adapter = load_adapter(path, framework)
        runner = adapter(device, mode)
        conn.send(("ready", adapter.version(), runner.mode))
    except (FrameworkMissing, Unavailable) as exc:
        conn.send(("fatal", type(exc).__name__, str(exc)))
        return
    except Exception as exc:
        conn.send(("fatal", "WorkerFailed", f"{path} failed to start: {one_line(exc)}"))
        return
    while True:
        conn.send(observe_safely(runner, conn.recv()))


class Worker:
    """One framework process that runs cases one at a time."""

    def __init__(self, framework: str, path: str, device: str, mode: str):
        ctx = multiprocessing.get_context("spawn")  # fork is unsafe with framework threads
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, framework, path, device, mode), daemon=True)
        self.process.start()
        child.close()

    def _receive(self, timeout: float):
        """The worker's next message, or ('error', why) if it died or took too long."""
        ready = wait([self.conn, self.process.sentinel], timeout)
        if self.conn in ready:
            try:
                return self.conn.recv()
            except (EOFError, OSError):
                pass
        elif not ready:
            self.kill()
            return "error", f"timed out after {timeout:g} s"
        self.process.join(5)
        code = self.process.exitcode
        if code is not None and code < 0:
            return "error", f"crashed: {signal.Signals(-code).name}"
        return "error", f"worker exited with status {code}"

    def start(self) -> tuple[str, str]:
        """Wait until the framework is imported; (version, mode), or raise what stopped it."""
        message = self._receive(STARTUP_TIMEOUT)
        if message[0] == "ready":
            return message[1], message[2]
        if message[0] == "fatal":
            kind, text = message[1], message[2]
            raise {"FrameworkMissing": FrameworkMissing, "Unavailable": Unavailable}.get(kind, WorkerFailed)(text)
        raise WorkerFailed(f"the worker died while starting: {message[1]}")

    def submit(self, case: Case) -> None:
        self.conn.send(case)

    def result(self, timeout: float) -> tuple[str, object]:
        """('ok', Observation) | ('unsupported', why) | ('error', one line: exception, crash, timeout)."""
        return self._receive(timeout)

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)

    def close(self) -> None:
        self.kill()  # it holds nothing worth a clean exit, and framework teardown is slow
        self.conn.close()


def run_isolated(worker: Worker, new_worker: Callable[[], Worker], instances: Iterable[Instance],
                 profile: list[KnownVariant], timeout: float | None,
                 on_result: Callable[[CaseRecord], None]) -> Worker:
    """Run every instance on `worker`, replacing it by `new_worker()` after a crash or hang.
    `timeout` (from the command line) overrides each case's own; returns the worker in use."""
    for instance in instances:
        case = instance.case
        limit = timeout or case.timeout or DEFAULT_TIMEOUT
        start = time.perf_counter()
        worker.submit(case)
        reference = reference_of(case)  # overlaps with the framework's run
        outcome = worker.result(limit)
        on_result(judge(instance, outcome, reference, profile, time.perf_counter() - start))
        if not worker.alive():
            worker = new_worker()
            worker.start()
    return worker
