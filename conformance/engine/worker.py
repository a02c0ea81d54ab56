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
import sys
import time
from multiprocessing.connection import wait
from typing import Callable, Iterable

from ..kernel.lines import one_line
from ..kernel.processes import Unread, die_with
from ..oracle.known import KnownVariant
from ..results import CaseRecord
from ..run import Run
from ..runners import FrameworkMissing, Unavailable, load_adapter
from ..spec import Case, Instance
from .judge import DEFAULT_TIMEOUT, TimeLimit, judge, observe_safely, reference_of, refusal, time_limit
from .ranks import GroupFailed, Nodes, Ranks

STARTUP_TIMEOUT = 300.0  # importing a framework can take long on a cold disk
POLL_S = 0.1  # how soon a dead worker is noticed while a child it forked holds its pipes open
START_TRIES = 3  # a replacement worker may itself be killed while it starts
MAX_REPLY = 64 << 20  # bytes: an observation of the spec's tiny models is a few KiB
MAX_WORD = 64  # characters of the version and backend an adapter reports: they name the results file
MAX_LINE = 300  # characters of the accelerator line an adapter reports
MAX_PACKAGES = 8  # packages beside the framework an adapter names
EXIT_GRACE_S = 1.0  # a worker that closed its pipe gets this long to exit by itself, so its own status shows


class WorkerFailed(Exception):
    """The worker could not start; the message is one line."""


def _worker_main(conn, path: str, run: Run, parent: int, nodes: Nodes) -> None:
    os.setsid()  # a process group of its own: killing the group also ends whatever it forks
    die_with(parent)
    sys.stdout, sys.stderr = Unread(sys.stdout), Unread(sys.stderr)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    import faulthandler
    faulthandler.enable()  # a native crash leaves a Python traceback on stderr
    group = None
    try:
        adapter = load_adapter(path, run.framework)
        # a data-parallel run's processes: a launcher's ranks, or none besides this one
        launcher = adapter.parallelism.launcher(nodes.count) if adapter.parallelism and run.replicas != "1" else None
        if nodes.count > 1 and launcher is None:
            raise Unavailable(f"{run.framework} runs its replicas in one process, with no launcher: it has no "
                              f"--nodes")
        if launcher is not None:  # this process coordinates the ranks
            group = Ranks(launcher, path, adapter.offers.resolve(run), nodes)
            version, backend, accelerator, packages = group.start()
            conn.send(("ready", version, backend, accelerator, packages))
        else:
            runner = adapter(run)
            conn.send(("ready", adapter.version(), runner.backend, runner.accelerator(), runner.packages()))
    except (FrameworkMissing, Unavailable) as exc:
        conn.send(("fatal", type(exc).__name__, str(exc)))
        return
    except GroupFailed as exc:
        conn.send(("fatal", "WorkerFailed", f"the rank group did not start: {exc}"))
        return
    except Exception as exc:
        conn.send(("fatal", "WorkerFailed", f"{path} failed to start: {one_line(exc)}"))
        return
    while True:
        seq, case, limit = conn.recv()
        outcome = group.observe(case, limit) if group else observe_safely(runner, case)
        try:  # each reply names the request it answers: the parent checks both
            conn.send((seq, case.id, outcome))
        except Exception as exc:  # pickling failed, so nothing was written yet
            conn.send((seq, case.id, ("error", f"bad observation: cannot send it: {one_line(exc)}")))


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

    def __init__(self, run: Run, path: str, nodes: Nodes = Nodes()):
        ctx = multiprocessing.get_context("spawn")  # fork is unsafe with framework threads
        self.conn, child = ctx.Pipe()
        self.run = run
        self.accelerator = ""  # what the adapter says it computes on, once started
        self.packages = {}  # the versions of the packages beside the framework, once started
        self.process = ctx.Process(target=_worker_main, args=(child, path, run, os.getpid(), nodes), daemon=True)
        self.ended = False
        self.asked = (0, "")  # the request in flight: (sequence number, case id)
        self.process.start()
        child.close()

    def _receive(self, timeout: float, idle: Callable[[], None] | None = None) -> tuple[bool, object]:
        """(True, the worker's next message) or (False, why there is none): it died, took longer
        than `timeout`, sent more than MAX_REPLY bytes or half a message, or what cannot be
        unpickled. A child it forked keeps the pipe and the sentinel open after the worker dies, so
        its exit is also polled; `idle()` is called between polls (the run's periodic save)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready = wait([self.conn, self.process.sentinel], max(0.0, min(POLL_S, left)))
            if self.conn in ready:
                return self._load(max(deadline - time.monotonic(), POLL_S))
            if ready or self.process.exitcode is not None:
                return False, self._death()
            if left <= 0:
                self.kill()
                return False, f"timed out after {timeout:g} s"
            if idle is not None:
                idle()

    def _load(self, left: float) -> tuple[bool, object]:
        try:
            with time_limit(left):  # the length arrived; the rest must follow within the case's time
                data = self.conn.recv_bytes(MAX_REPLY)
        except TimeLimit:
            self.kill()
            return False, "timed out after sending part of a reply"
        except EOFError:
            return False, self._death()
        except OSError as exc:  # "bad message length": a length prefix past MAX_REPLY, or garbage
            if self.process.exitcode is not None or str(exc) != "bad message length":
                return False, self._death()
            self.kill()
            return False, f"bad observation: its reply is longer than {MAX_REPLY >> 20} MiB"
        try:
            return True, _Unpickler(io.BytesIO(data)).load()
        except Exception as exc:
            self.kill()  # what else it sends cannot be trusted: a fresh worker takes the next case
            text = str(exc).strip().splitlines()
            return False, f"bad observation: cannot unpickle it: {type(exc).__name__}: {text[0] if text else ''}"

    def _death(self) -> str:
        """Why the worker is gone: its exit status or the signal that ended it (given a moment to
        exit by itself, so a Python-level exit is not reported as the kill that follows)."""
        self.process.join(EXIT_GRACE_S)
        code = self.process.exitcode
        self.kill()  # its group too: a child it forked may outlive it, holding the pipe
        if code is None:
            return "closed its pipe without exiting"
        if code < 0:
            try:
                return f"crashed: {signal.Signals(-code).name}"
            except ValueError:
                return f"crashed: signal {-code}"
        return f"worker exited with status {code}"

    def start(self) -> Run:
        """Wait until the framework is imported; the run with its version and graph backend filled
        in, or raise what stopped it."""
        ok, message = self._receive(STARTUP_TIMEOUT)
        if not ok:  # died, hung, unreadable
            raise WorkerFailed(f"the worker died while starting: {message}")
        if type(message) is tuple and len(message) == 5 and message[0] == "ready" and type(message[4]) is dict:
            packages, message = message[4], message[:4]
            if len(packages) > MAX_PACKAGES or not all(
                    type(k) is str and type(v) is str and 0 < len(k) <= MAX_WORD and 0 < len(v) <= MAX_WORD
                    and k.isprintable() and v.isprintable() for k, v in packages.items()):
                self.kill()
                raise WorkerFailed(f"the adapter's packages are not at most {MAX_PACKAGES} names and versions, "
                                   f"each a short printable word")
            self.packages = dict(packages)
        if type(message) is tuple and len(message) in (3, 4) and all(type(m) is str for m in message):
            if message[0] == "ready" and len(message) == 4:
                for what, word in (("version", message[1]), ("backend", message[2])):
                    if len(word) > MAX_WORD or not word.isprintable():  # it names the results file
                        self.kill()
                        raise WorkerFailed(f"the adapter's {what} is not a short printable word "
                                           f"({len(word)} characters: {word[:40]!r}...)")
                if len(message[3]) > MAX_LINE or not message[3].isprintable():
                    self.kill()
                    raise WorkerFailed(f"the adapter's accelerator is not one printable line of at most "
                                       f"{MAX_LINE} characters ({len(message[3])}: {message[3][:40]!r}...)")
                self.run = self.run.replace(version=message[1], backend=message[2])
                self.accelerator = message[3]
                return self.run
            if message[0] == "fatal" and len(message) == 3:
                kind, text = message[1], message[2][:2000]
                raise {"FrameworkMissing": FrameworkMissing, "Unavailable": Unavailable}.get(kind, WorkerFailed)(text)
        raise WorkerFailed("the worker's ready message is not four strings and a dict (is version() a str?)")

    def submit(self, case: Case, limit: float) -> None:
        """Send the case; `limit` is its time limit (a rank group's coordinator reports a hung rank before it)."""
        self.asked = (self.asked[0] + 1, case.id)
        try:
            self.conn.send((self.asked[0], case, limit))
        except OSError:
            pass  # it died between cases: result() says how

    def result(self, timeout: float, idle: Callable[[], None] | None = None) -> tuple[str, object]:
        """('ok', observation: check it) | ('unsupported', why) | ('error', one line: exception,
        crash, timeout, unreadable reply). A reply that does not answer the request in flight (an
        extra or a missing message, from a process it forked) ends the worker: nothing it sends
        after that can be tied to a case."""
        ok, message = self._receive(timeout, idle)
        if not ok:
            return "error", message
        if not (type(message) is tuple and len(message) == 3 and (message[0], message[1]) == self.asked):
            self.kill()
            return "error", "bad observation: the worker's reply does not answer this case (an extra or missing message)"
        outcome = message[2]
        if type(outcome) is tuple and len(outcome) == 2 and (
                outcome[0] == "ok" or outcome[0] in ("unsupported", "error") and type(outcome[1]) is str):
            return outcome
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
                 on_result: Callable[[CaseRecord], None], idle: Callable[[], None] | None = None) -> Worker:
    """Run every instance on `worker`, replacing it by `new_worker()` after a crash or hang.
    `timeout` (from the command line) overrides each case's own; returns the worker in use.
    The parent's oracle work overlaps with the framework's: the reference while the worker runs the
    same case, the judging (variant oracle runs included) while it runs the next one. `idle()` is
    called while a case runs, every POLL_S."""
    def runnable():  # taken one at a time: a caller may still be producing them
        for instance in instances:
            why = refusal(instance, worker.run.api)
            if why is None:
                yield instance
            else:  # nothing for the framework to run
                on_result(judge(instance, ("unsupported", why), None, profile, 0.0))

    pending = runnable()
    instance = next(pending, None)
    limit_of = lambda case: timeout or case.timeout or DEFAULT_TIMEOUT  # noqa: E731
    if instance is not None:
        worker.submit(instance.case, limit_of(instance.case))
        start = time.perf_counter()
    while instance is not None:
        case = instance.case
        limit = limit_of(case)
        reference = reference_of(case, limit)
        outcome = worker.result(limit, idle)
        duration = time.perf_counter() - start
        if not worker.alive():
            worker = _replacement(new_worker)
        following = next(pending, None)
        if following is not None:
            worker.submit(following.case, limit_of(following.case))
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
