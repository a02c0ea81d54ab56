"""Test-only adapter: the reference oracle, plus a fault at the worker's pipe named by a layer of the
case's model (the bytes a misbehaving framework, or a process it forked, could put on the pipe)."""
import gc
import os
import struct
import sys
import time
from multiprocessing.connection import Connection

from conformance.oracle.reference import ReferenceRunner


def _pipe() -> Connection:
    """The worker's end of the pipe to the parent (the one connection the worker process holds)."""
    return next(o for o in gc.get_objects() if isinstance(o, Connection) and not o.closed)


class PipeRunner(ReferenceRunner):
    framework = "pipe"

    def build(self, model, values):
        layers = set(model.layers)
        if "extra" in layers:  # a forked child answers too: one message more than was asked for
            if os.fork() == 0:
                _pipe().send((1, "healthy-0", ("ok", None)))
                os._exit(0)
            time.sleep(0.5)
        if "huge" in layers:  # a length prefix of 1 GiB, and nothing behind it
            os.write(_pipe().fileno(), struct.pack("!i", 1 << 30))
            time.sleep(3600)
        if "half" in layers:  # half a message, then silence
            os.write(_pipe().fileno(), struct.pack("!i", 100) + b"x" * 10)
            time.sleep(3600)
        if "bytes" in layers:  # whatever bytes the test chose, raw on the pipe, then silence
            with open(os.environ["PIPE_BYTES"], "rb") as fh:
                os.write(_pipe().fileno(), fh.read())
            time.sleep(3600)
        if "daemon" in layers:  # a grandchild in a session of its own (a framework's server process)
            start_daemon(os.environ["DAEMON_PID"], clean_env=False)
        if "cleandaemon" in layers:  # a grandchild in a session of its own with an empty environment, then a hang
            start_daemon(os.environ["DAEMON_PID"], clean_env=True)
            time.sleep(600)
        if "prints" in layers:  # a chatty framework, whose reader may be gone
            for n in range(2000):
                print(f"framework progress {n}", flush=True)
        if "slow" in layers:
            time.sleep(3600)
        if "exits" in layers:  # a Python-level exit, as a framework's sys.exit() on a fatal error
            sys.exit(3)
        super().build(model, values)


class WarmingRunner(PipeRunner):
    """A framework whose compiler warms up when the adapter starts (torch graph mode does so): the
    warm-up is the worker's start, under its own limit, never the first case's."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        time.sleep(float(os.environ.get("WARM_UP_S", "0")))


def start_daemon(pid_file, clean_env):
    """A process out of reach of the run's process group and session, holding none of the run's pipes; with
    clean_env, out of reach of the run's environment tag too (a framework's server started with env={}, say)."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            with open(pid_file, "w") as fh:
                fh.write(str(os.getpid()))
            for fd in (0, 1, 2):  # nothing else would notice it
                os.dup2(os.open(os.devnull, os.O_RDWR), fd)
            if clean_env:
                os.execve("/bin/sleep", ["sleep", "600"], {})
            time.sleep(600)
        os._exit(0)
    os.waitpid(pid, 0)
