"""Process isolation: a framework runs in one worker process for all the cases of a run, so its
import is paid once. A case that segfaults, aborts, exits or hangs takes only its worker down (with
any process it forked): the case becomes `error` with a one-line reason and a fresh worker carries
on with the rest. What the worker sends back is untrusted: it is unpickled with an allow-list and
checked against the case, and a malformed observation is that case's `error`. The reference oracle
runs in the parent meanwhile, on the other core, under the same time limit.
"""
from __future__ import annotations

import io
import multiprocessing
import os
import pickle
import signal
import time
from multiprocessing.connection import wait
from typing import Callable, Iterable

from ..oracle.known import KnownVariant
from ..run import Run
from ..runners import FrameworkMissing, Unavailable, load_adapter
from ..spec import Case, Instance
from .judge import DEFAULT_TIMEOUT, judge, observe_safely, one_line, reference_of, refusal

STARTUP_TIMEOUT = 300.0  # importing a framework can take long on a cold disk
POLL_S = 0.1  # how soon a dead worker is noticed while a child it forked holds its pipes open
START_TRIES = 3  # a replacement worker may itself be killed while it starts


class WorkerFailed(Exception):
    """The worker could not start; the message is one line."""


def _worker_main(conn, path: str, run: Run) -> None:
    os.setsid()  # a process group of its own: killing the group also ends whatever it forks
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    import faulthandler
    faulthandler.enable()  # a native crash leaves a Python traceback on stderr
    try:
        adapter = load_adapter(path, run.framework)
        runner = adapter(run)
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
_ALLOWED = ({("conformance.engine.scenario", "Observation"), ("conformance.engine.scenario", "StepObservation"),
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

    def __init__(self, run: Run, path: str):
        ctx = multiprocessing.get_context("spawn")  # fork is unsafe with framework threads
        self.conn, child = ctx.Pipe()
        self.run = run
        self.process = ctx.Process(target=_worker_main, args=(child, path, run), daemon=True)
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

    def start(self) -> Run:
        """Wait until the framework is imported; the run with its version and graph backend filled
        in, or raise what stopped it."""
        message = self._receive(STARTUP_TIMEOUT)
        if type(message) is tuple and len(message) == 3 and all(type(m) is str for m in message):
            if message[0] == "ready":
                self.run = self.run.replace(version=message[1], backend=message[2])
                return self.run
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
            why = refusal(instance, worker.run.api)
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
