"""Run spec instances on an adapter and turn each into a CaseRecord with its verdict.

A framework runs in one worker process for all its cases, so its import is paid once. A case that
segfaults, aborts, exits or hangs takes only its worker down (with any process it forked): the
case becomes `error` with a one-line reason and a fresh worker carries on with the rest. What the
worker sends back is untrusted: it is unpickled with an allow-list and checked against the case, and
a malformed observation is that case's `error`. The reference oracle runs in the parent meanwhile,
on the other core, under the same time limit.
"""
from __future__ import annotations

import io
import multiprocessing
import os
import pickle
import signal
import time
import traceback
from contextlib import contextmanager
from multiprocessing.connection import wait
from typing import Callable, Iterable

from .reference import ReferenceRunner
from .results import CaseRecord, CheckRecord, Explanation, VariantRecord
from .runners import FrameworkMissing, Unavailable, load_adapter
from .runners.base import Runner, Unsupported
from .scenario import BadObservation, Observation, checked, observe, trainer_refusal
from .schema import Case, Instance, KnownVariant
from .verdict import evaluate, failure_summary, observed, probes, unexplained

DEFAULT_TIMEOUT = 30.0  # seconds per case; a case's `timeout` or --timeout overrides it
STARTUP_TIMEOUT = 300.0  # importing a framework can take long on a cold disk
POLL_S = 0.1  # how soon a dead worker is noticed while a child it forked holds its pipes open
START_TRIES = 3  # a replacement worker may itself be killed while it starts


class WorkerFailed(Exception):
    """The worker could not start; the message is one line."""


class TimeLimit(BaseException):
    """Raised by `time_limit`; not an Exception, so no `except Exception` in the block swallows it."""


@contextmanager
def time_limit(seconds: float):
    """Raise TimeLimit inside the block once it has run `seconds` (wall clock). Uses SIGALRM, so
    only in the main thread; the previous handler is restored, and an outer timer re-armed with
    what it had left."""
    def expire(signum, frame):
        raise TimeLimit(f"ran past {seconds:g} s")

    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    # setitimer overflows on inf or ~1e12 s: past 1e8 s (three years) is as good as no limit
    outer, _ = signal.setitimer(signal.ITIMER_REAL, min(seconds, 1e8))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 1e-6))


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


def explain(instance: Instance, obs: Observation, ref: Observation, profile: list[KnownVariant],
            limit: float = DEFAULT_TIMEOUT, ablate: bool = True) -> tuple[list[KnownVariant], str | None]:
    """Run the oracle under the profile's variants (`ref`: its observation without them). When it
    reproduces every checked observation of `obs`: (the variants it needed, None), found by dropping,
    one at a time, each variant whose removal keeps the match, so every one named is needed. Otherwise: ([], the first check it does not explain).
    All its oracle runs together get `limit` seconds, the case's own limit. Without `ablate`, only
    whether the whole profile reproduces `obs` is asked (and all of it is returned)."""
    def miss(variants) -> str | None:
        model = observe_safely(ReferenceRunner(variants=[v.variant for v in variants]), instance.case)
        if model[0] != "ok":
            return f"the variant oracle failed: {model[1]}"
        check = unexplained(instance, obs, model[1], ref)
        return None if check is None else f"{check.check}: observed {check.observed}, variant oracle expects otherwise"

    try:
        with time_limit(limit):
            first = miss(profile)
            if first is not None:
                return [], first
            needed = list(profile)
            if not ablate:
                return needed, None
            for variant in list(needed):
                trial = [v for v in needed if v is not variant]
                if miss(trial) is None:
                    needed = trial
            return needed, None
    except TimeLimit:
        return [], f"the variant oracle timed out after {limit:g} s"


def judge(instance: Instance, outcome: tuple[str, object], reference: Observation | str,
          profile: list[KnownVariant], duration: float, limit: float = DEFAULT_TIMEOUT) -> CaseRecord:
    """The record of one instance: its checks against the spec, and for a divergence whether the
    oracle under the framework's profile (its variants for this version) reproduces it."""
    case = instance.case
    record = dict(id=instance.id, base_id=case.id, topic=instance.topic, title=case.title,
                  references=[str(r) for r in case.references], axes=instance.axes,
                  source=instance.source, duration_s=duration)
    kind, payload = outcome
    if isinstance(reference, str):  # a suite bug or limit, not a framework finding
        return CaseRecord(**record, verdict="error", reason=reference)
    if kind != "ok":
        return CaseRecord(**record, verdict=kind, reason=payload)
    try:
        observation = checked(payload, case, reference)
    except BadObservation as exc:
        return CaseRecord(**record, verdict="error", reason=f"bad observation: {exc}")
    checks = evaluate(instance, observation, reference)
    record["unobserved"] = [label if step is None else f"{label} @ step {step}"
                            for label, _, step, kind, _ in probes(instance) if not observed(kind, observation)]
    if not checks:  # nothing was compared: calling it conform would report a skipped case as passing
        why = f"this run cannot observe any of its checks ({'; '.join(record['unobserved'])})" \
            if record["unobserved"] else "no check of the case applies to this instance"
        return CaseRecord(**record, verdict="unsupported", reason=why)
    held = all(c.held for c in checks)
    checks_kept = [CheckRecord(**vars(c)) for c in checks]
    if held:  # the profile must not predict a divergence that did not happen
        _, miss = explain(instance, observation, reference, profile, limit, ablate=False) if profile else ([], None)
        return CaseRecord(**record, verdict="conform", unexplained=miss, checks=checks_kept)
    needed, miss = explain(instance, observation, reference, profile, limit)
    explanation = Explanation(variants=[VariantRecord.of(v) for v in needed]) if needed else None
    documented = explanation is not None and all(v.link is not None for v in needed)
    return CaseRecord(**record, verdict="divergence", reason=failure_summary(checks),
                      documented=explanation if documented else None,
                      explained_by=None if documented else explanation,
                      unexplained=miss, checks=checks_kept)


def refusal(instance: Instance, api: str) -> str | None:
    """Why the run's api cannot observe this instance at all, or None."""
    if api != "trainer":
        return None
    kinds = {kind for *_, kind, _ in probes(instance)}
    if kinds == {"grad"}:
        return "checks only gradients: a framework's trainer does not expose them"
    return trainer_refusal(instance.case)


def reference_of(case: Case, limit: float) -> Observation | str:
    """The oracle's observation, or the one-line reason there is none: it failed, or it ran past
    `limit` seconds (the case's own limit: a big case could otherwise run the oracle for minutes)."""
    try:
        with time_limit(limit):
            kind, payload = observe_safely(ReferenceRunner(), case)
    except TimeLimit:
        return f"reference oracle timed out after {limit:g} s"
    return payload if kind == "ok" else f"reference oracle failed: {payload}"


def run_instance(runner: Runner, instance: Instance, profile: list[KnownVariant]) -> CaseRecord:
    """In-process run of one instance (for in-memory adapters and tests: no crash isolation)."""
    start = time.perf_counter()
    limit = instance.case.timeout or DEFAULT_TIMEOUT
    if why := refusal(instance, runner.api):
        return judge(instance, ("unsupported", why), None, profile, 0.0)
    reference = reference_of(instance.case, limit)
    outcome = observe_safely(runner, instance.case)
    return judge(instance, outcome, reference, profile, time.perf_counter() - start, limit)


# ---------------------------------------------------------------- the worker process
def _worker_main(conn, framework: str, path: str, device: str, mode: str, api: str, backend: str | None) -> None:
    os.setsid()  # a process group of its own: killing the group also ends whatever it forks
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    import faulthandler
    faulthandler.enable()  # a native crash leaves a Python traceback on stderr
    try:
        adapter = load_adapter(path, framework)
        runner = adapter(device, mode, api, backend)
        conn.send(("ready", adapter.version(), runner.backend))
    except (FrameworkMissing, Unavailable) as exc:
        conn.send(("fatal", type(exc).__name__, str(exc)))
        return
    except Exception as exc:
        conn.send(("fatal", "WorkerFailed", f"{path} failed to start: {one_line(exc)}"))
        return
    while True:
        outcome = observe_safely(runner, conn.recv())
        try:
            conn.send(outcome)
        except Exception as exc:  # pickling failed, so nothing was written yet
            conn.send(("error", f"bad observation: cannot send it: {one_line(exc)}"))


# What may cross the pipe from the worker besides plain Python values: the observation's classes
# and NumPy's array and scalar rebuilders. Anything else (a tensor, an adapter's own class) is
# refused unread, so no framework or adapter code is imported or run in the parent.
_ALLOWED = ({("conformance.scenario", "Observation"), ("conformance.scenario", "StepObservation"),
             ("builtins", "complex"), ("numpy", "ndarray"), ("numpy", "dtype")}
            | {(module, name) for module in ("numpy.core.multiarray", "numpy._core.multiarray")
               for name in ("_reconstruct", "scalar")})


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} may not cross from the worker")
        return super().find_class(module, name)


class Worker:
    """One framework process that runs cases one at a time."""

    def __init__(self, framework: str, path: str, device: str, mode: str = "eager", api: str = "loop",
                 backend: str | None = None):
        ctx = multiprocessing.get_context("spawn")  # fork is unsafe with framework threads
        self.conn, child = ctx.Pipe()
        self.api = api
        self.process = ctx.Process(target=_worker_main, args=(child, framework, path, device, mode, api, backend),
                                   daemon=True)
        self.ended = False
        self.process.start()
        child.close()

    def _receive(self, timeout: float):
        """The worker's next message, or ('error', why) if it died, took too long or sent what
        cannot be unpickled. A child it forked keeps the pipe and the sentinel open after the
        worker dies, so its exit is also polled."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready = wait([self.conn, self.process.sentinel], max(0.0, min(POLL_S, left)))
            if self.conn in ready:
                return self._load()
            if ready or self.process.exitcode is not None:
                return self._death()
            if left <= 0:
                self.kill()
                return "error", f"timed out after {timeout:g} s"

    def _load(self):
        try:
            data = self.conn.recv_bytes()
        except (EOFError, OSError):
            return self._death()
        try:
            return _Unpickler(io.BytesIO(data)).load()
        except Exception as exc:
            self.kill()  # what else it sends cannot be trusted: a fresh worker takes the next case
            text = str(exc).strip().splitlines()
            return "error", f"bad observation: cannot unpickle it: {type(exc).__name__}: {text[0] if text else ''}"

    def _death(self):
        self.kill()  # its group too: a child it forked may outlive it, holding the pipe
        code = self.process.exitcode
        if code is not None and code < 0:
            try:
                return "error", f"crashed: {signal.Signals(-code).name}"
            except ValueError:
                return "error", f"crashed: signal {-code}"
        return "error", f"worker exited with status {code}"

    def start(self) -> tuple[str, str]:
        """Wait until the framework is imported; (version, graph backend or ""), or raise what stopped it."""
        message = self._receive(STARTUP_TIMEOUT)
        if type(message) is tuple and len(message) == 3 and all(type(m) is str for m in message):
            if message[0] == "ready":
                return message[1], message[2]
            if message[0] == "fatal":
                kind, text = message[1], message[2]
                raise {"FrameworkMissing": FrameworkMissing, "Unavailable": Unavailable}.get(kind, WorkerFailed)(text)
        if type(message) is tuple and len(message) == 2 and message[0] == "error":  # died, hung, unreadable
            raise WorkerFailed(f"the worker died while starting: {message[1]}")
        raise WorkerFailed("the worker's ready message is not three strings (is version() a str?)")

    def submit(self, case: Case) -> None:
        try:
            self.conn.send(case)
        except OSError:
            pass  # it died between cases: result() says how

    def result(self, timeout: float) -> tuple[str, object]:
        """('ok', observation: check it) | ('unsupported', why) | ('error', one line: exception,
        crash, timeout, unreadable reply)."""
        message = self._receive(timeout)
        if type(message) is tuple and len(message) == 2 and (
                message[0] == "ok" or message[0] in ("unsupported", "error") and type(message[1]) is str):
            return message
        return "error", "bad observation: the worker's reply is not (kind, payload)"

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        """End the worker and its process group, once: later the group id may belong to others."""
        if self.ended:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # no such group: it died before os.setsid(), or it and its children are gone
        self.process.kill()
        self.process.join(5)
        self.ended = True

    def close(self) -> None:
        self.kill()  # it holds nothing worth a clean exit, and framework teardown is slow
        self.conn.close()


def run_isolated(worker: Worker, new_worker: Callable[[], Worker], instances: Iterable[Instance],
                 profile: list[KnownVariant], timeout: float | None,
                 on_result: Callable[[CaseRecord], None]) -> Worker:
    """Run every instance on `worker`, replacing it by `new_worker()` after a crash or hang.
    `timeout` (from the command line) overrides each case's own; returns the worker in use.
    The parent's oracle work overlaps with the framework's: the reference while the worker runs the
    same case, the judging (variant oracle runs included) while it runs the next one."""
    def runnable():  # taken one at a time: a caller may still be producing them
        for instance in instances:
            why = refusal(instance, worker.api)
            if why is None:
                yield instance
            else:  # nothing for the framework to run
                on_result(judge(instance, ("unsupported", why), None, profile, 0.0))

    pending = runnable()
    instance = next(pending, None)
    if instance is not None:
        worker.submit(instance.case)
        start = time.perf_counter()
    while instance is not None:
        case = instance.case
        limit = timeout or case.timeout or DEFAULT_TIMEOUT
        reference = reference_of(case, limit)
        outcome = worker.result(limit)
        duration = time.perf_counter() - start
        if not worker.alive():
            worker = _replacement(new_worker)
        following = next(pending, None)
        if following is not None:
            worker.submit(following.case)
            start = time.perf_counter()
        on_result(judge(instance, outcome, reference, profile, duration, limit))
        instance = following
    return worker


def _replacement(new_worker: Callable[[], Worker]) -> Worker:
    """A started fresh worker; one that dies while starting is tried again, a few times."""
    for attempt in range(1, START_TRIES + 1):
        worker = new_worker()
        try:
            worker.start()
            return worker
        except WorkerFailed:
            if attempt == START_TRIES:
                raise
