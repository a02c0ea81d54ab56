"""The guardian of a contained process (processes.contain): waits for that process to end, however it ends, then
kills what is left in its cgroup and removes it. A script of its own, run by path, that needs nothing but the
standard library (the package may not be importable from where it runs).
    python guardian.py PID CGROUP_FOLDER"""
import os
import select
import signal
import sys
import time


def wait_for_end(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)  # readable once the process has ended
    except (AttributeError, OSError):  # an old kernel or Python, or gone already: ask every 0.2 s
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            except PermissionError:
                pass
            time.sleep(0.2)
    select.select([fd], [], [])


def remove_cgroup(group: str) -> None:
    """Remove a cgroup and the cgroups under it, deepest first (one with a process left stays)."""
    for folder, subfolders, _ in os.walk(group, topdown=False):
        for name in subfolders:
            try:
                os.rmdir(os.path.join(folder, name))
            except OSError:
                pass
    try:
        os.rmdir(group)
    except OSError:
        pass


def kill_cgroup(group: str, wait_s: float = 10.0) -> None:
    """Kill every process in a cgroup and under it (cgroup.kill where the kernel has it, else each pid, over and
    over, as a process may fork meanwhile), then remove it."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(group, "cgroup.kill"), "w") as fh:
                fh.write("1")
        except OSError:
            pass
        left = []
        for folder, _, files in os.walk(group):
            if "cgroup.procs" in files:
                try:
                    with open(os.path.join(folder, "cgroup.procs")) as fh:
                        left += [int(pid) for pid in fh.read().split()]
                except (OSError, ValueError):
                    pass
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
    remove_cgroup(group)


if __name__ == "__main__":
    wait_for_end(int(sys.argv[1]))
    kill_cgroup(sys.argv[2])
