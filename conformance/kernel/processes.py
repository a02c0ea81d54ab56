"""Child processes that end with their parent and leave nothing behind: a worker of a run, a rank's
launcher, a TensorFlow worker, an audited step, and (contain) whatever any of them started; nor their
temporary files (tag_run's folder)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from multiprocessing import resource_tracker

from . import guardian

TAG = "CONFORMANCE_RUN_TAG"  # in a worker's environment, so every process it starts carries it too
RUN_FOLDER_PREFIX = "conformance-run-"  # of a run's temporary folder, followed by the run's tag
_folders: dict[str, tuple[Path, str | None]] = {}  # by tag: the run's folder, and TMPDIR as it was before


def tag_run() -> str:
    """Mark the processes this run starts from now on: they (and whatever they start, in any session)
    inherit the tag through their environment, so end_strays finds them at the run's end. They also
    inherit TMPDIR, the run's own temporary folder: what they leave there (the code TensorFlow generates,
    MindSpore's compile dumps, a launcher's logs; a killed process removes nothing) goes with end_run.
    First, the folders of runs that are gone (killed before they could end) are removed."""
    resource_tracker.ensure_running()  # multiprocessing's own helper outlives runs: it must not carry the tag
    system = Path(tempfile.gettempdir())  # this process's own, fixed before TMPDIR changes below
    _remove_gone_runs_folders(system)
    tag = os.environ[TAG] = f"{os.getpid()}-{time.monotonic_ns()}"
    folder = system / f"{RUN_FOLDER_PREFIX}{tag}"
    try:
        folder.mkdir(mode=0o700)
    except OSError:  # a full disk: the run goes on, its processes' temporary files where they would be
        return tag
    _folders[tag] = folder, os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(folder)
    return tag


def end_run(tag: str) -> list[int]:
    """At a run's end: end what is left of it (end_strays), remove its temporary folder, and take the tag
    and TMPDIR back off this process. Returns the pids it ended."""
    ended = end_strays(tag)
    if os.environ.get(TAG) == tag:
        os.environ.pop(TAG)
    if tag in _folders:
        folder, before = _folders.pop(tag)
        shutil.rmtree(folder, ignore_errors=True)
        if before is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before
    return ended


def run_folder() -> str | None:
    """The temporary folder of the run this process belongs to (tag_run's), or None outside a run. In the processes
    the run started it is also tempfile's; in the run's own process it is not (end_run restores TMPDIR)."""
    tag, folder = os.environ.get(TAG), os.environ.get("TMPDIR")
    return folder if tag and folder and Path(folder).name == f"{RUN_FOLDER_PREFIX}{tag}" else None


def _remove_gone_runs_folders(system: Path) -> None:
    """The temporary folders of runs whose process is gone. A folder is named by its run's tag, whose first part
    is the run's pid. (A pid reused since by another process keeps its folder until that process ends too.)"""
    if not os.path.isdir("/proc"):  # no way to tell a live run from a gone one here
        return
    for folder in system.glob(f"{RUN_FOLDER_PREFIX}*"):
        pid = folder.name[len(RUN_FOLDER_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


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
