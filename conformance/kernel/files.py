"""Files written whole or not at all, and the lock that keeps two runs from writing one results file."""
from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str | bytes, sync: bool = False) -> None:
    """Write `path` via a temporary file in its folder and a rename over it: readers never see half a
    file, a signal or a full disk leaves the previous file as it was, and a link at `path` is replaced,
    never followed. Text from inputs may hold lone surrogates (file names, asv's JSON): kept as their
    escapes; bytes are written as they are. `sync`: on the disk before the rename, so a full disk shows here
    and not after it."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 would make the file private to whoever wrote it
        with (os.fdopen(fd, "wb") if isinstance(text, bytes) else
              os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace")) as fh:
            fh.write(text)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        if path.is_dir() and not path.is_symlink():
            raise IsADirectoryError(21, "Is a directory", str(path))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Busy(Exception):
    """Another run holds the results file's lock; the message is one line."""


def lock(path: Path, wait: bool = False) -> int:
    """Hold `<path>.lock` (flock; `wait`: until the holder lets go, else Busy at once) for a whole run, so
    two runs never write one results file; returns the descriptor for unlock(). The lock file names the
    holder's pid."""
    path = Path(path)
    name = path.with_name(path.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = (os.read(fd, 32).decode(errors="replace").split() or ["?"])[0]
            os.close(fd)
            raise Busy(f"{path} is being written by another run (pid {holder} holds {name})") from None
        try:
            if os.path.samestat(os.fstat(fd), os.stat(name)):
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # the holder removed it as it finished: lock the new one
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except BaseException:  # a full disk: let go, or this process would hold the lock to its end
        unlock(path, fd)
        raise
    return fd


def unlock(path: Path, fd: int) -> None:
    path = Path(path)
    path.with_name(path.name + ".lock").unlink(missing_ok=True)  # removed while held: see lock()
    os.close(fd)
