"""Child processes that end with their parent and leave nothing behind: a worker of a run, a rank's
launcher, a TensorFlow worker, an audited step, and (contain) whatever any of them started."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from multiprocessing import resource_tracker

from . import guardian

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


_contained: list[str] = []  # the cgroup this process moved into (contain), once per process
_guardians: list[subprocess.Popen] = []  # held, so that no warning says it still runs


def contain() -> str | None:
    """Linux, where a cgroup v2 hierarchy is writable here (a container, root, a delegated subtree): move this
    process, and so everything it starts from now on, into a cgroup of its own, and start a guardian outside it,
    in a session of its own, that kills whatever is left in that cgroup once this process has ended, however it
    ended: SIGKILL included, and a daemon that left its session and cleared its environment (out of reach of
    end_strays) included. Returns the cgroup's folder, or None where there is none to write (then the workers'
    sessions, PR_SET_PDEATHSIG and end_strays are what ends them). Once per process."""
    if _contained:
        return _contained[0]
    group = _new_cgroup()
    if group is None:
        return None
    env = {k: v for k, v in os.environ.items() if k != TAG}  # end_strays must not end the guardian
    devnull = subprocess.DEVNULL
    try:
        _guardians.append(subprocess.Popen(
            [sys.executable, guardian.__file__, str(os.getpid()), group],
            env=env, stdin=devnull, stdout=devnull, stderr=devnull, start_new_session=True, cwd="/"))
        with open(os.path.join(group, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
    except OSError:
        guardian.remove_cgroup(group)
        return None
    _contained.append(group)
    return group


def can_contain() -> bool:
    """Whether contain() would find a cgroup to make here."""
    group = _contained[0] if _contained else _new_cgroup()
    if group and not _contained:
        guardian.remove_cgroup(group)
    return group is not None


def _new_cgroup() -> str | None:
    """A new cgroup under this process's own in a writable cgroup v2 hierarchy, or None."""
    try:
        with open("/proc/self/cgroup") as fh:
            own = next((line.split("::", 1)[1].strip() for line in fh if line.startswith("0::")), None)
        with open("/proc/self/mounts") as fh:
            mounts = [line.split()[1] for line in fh if line.split()[2:3] == ["cgroup2"]]
    except OSError:
        return None
    for mount in mounts if own is not None else []:
        parent = os.path.join(mount, own.lstrip("/"))
        if not os.access(parent, os.W_OK) or not os.path.exists(os.path.join(parent, "cgroup.procs")):
            continue
        group = os.path.join(parent, f"conformance-{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.mkdir(group)
            return group
        except OSError:
            continue
    return None


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
