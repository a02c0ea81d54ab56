"""Child processes that end with their parent and leave nothing behind: a worker of a run, a rank's
launcher, a TensorFlow worker, an audited step."""
from __future__ import annotations

import os
import signal
import sys
import time
from multiprocessing import resource_tracker

TAG = "CONFORMANCE_RUN_TAG"  # in a worker's environment, so every process it starts carries it too


def tag_run() -> str:
    """Mark the workers this run starts from now on: they (and whatever they start, in any session)
    inherit the tag through their environment, so end_strays finds them at the run's end."""
    resource_tracker.ensure_running()  # multiprocessing's own helper outlives runs: it must not carry the tag
    os.environ[TAG] = f"{os.getpid()}-{time.monotonic_ns()}"
    return os.environ[TAG]


def end_strays(tag: str) -> list[int]:
    """Linux: kill every process but this one that carries the run's tag: what the run's workers
    left behind, such as a child that started a session of its own (out of reach of the worker's
    process group). Returns their pids."""
    marker, ended = f"{TAG}={tag}\0".encode(), []
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else []:
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                if marker not in fh.read() + b"\0":
                    continue
            os.kill(int(entry.name), signal.SIGKILL)
            ended.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return ended


def die_with_parent() -> None:
    """Linux: the kernel kills this process when its parent dies, even by SIGKILL (the worker, the launcher before
    it runs, a rank)."""
    if sys.platform.startswith("linux"):
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def die_with(parent: int) -> None:
    """Linux: the kernel kills this process when its parent dies, even by SIGKILL, which gives the
    parent no chance to end it (the worker runs in a session of its own, out of the parent's group)."""
    die_with_parent()
    if os.getppid() != parent:  # the parent died before that took effect
        os._exit(1)


class Unread:
    """A text stream whose reader may be gone (`run ... | head`): what a framework prints must not
    fail the case it prints in."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except (OSError, ValueError):  # BrokenPipeError; a closed file
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name):
        return getattr(self._stream, name)
