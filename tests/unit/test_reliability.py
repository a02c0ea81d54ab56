"""Reliability, round 3: what crosses the worker's pipe is framed and bounded, finished results are
saved while a slow case runs, and a worker's own exit is told from a kill.

The test-only spec in faults/pipe puts a healthy case between faults a worker could put on its pipe
(faults/pipe_adapter.py); each healthy case must conform with its own observation."""
import os
import subprocess
import sys
import time
from pathlib import Path

from conformance import results

FAULTS = Path(__file__).parent / "faults"


def run_cli(out, *argv, timeout=180):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "conformance", "--spec", str(FAULTS / "pipe"), "run",
                           "--framework", "reference", "--adapter", "pipe_adapter:PipeRunner", "--out", str(out),
                           *argv], env=env, capture_output=True, text=True, timeout=timeout)


def test_pipe_faults_cost_only_their_own_case(tmp_path):
    out = tmp_path / "pipe.json"
    done = run_cli(out, "--timeout", "3")
    assert done.returncode == 0, done.stderr
    by_id = {c.id: c for c in results.read(out).cases}
    # an extra message (a forked child's) is never taken for this case's or the next case's answer
    assert by_id["pipe-extra"].reason.startswith("bad observation: the worker's reply does not answer this case")
    # a length prefix past the bound is refused without reading it
    assert by_id["pipe-huge"].reason == "bad observation: its reply is longer than 64 MiB"
    # half a message then silence costs the case's time limit, not the run
    assert by_id["pipe-half"].reason == "timed out after sending part of a reply"
    # the worker's own exit status, not the kill that followed it
    assert by_id["pipe-exits"].reason == "worker exited with status 3"
    healthy = [c for i, c in by_id.items() if i.startswith("healthy-")]
    assert len(healthy) == 5 and all(c.verdict == "conform" and c.checks for c in healthy)


def test_finished_cases_are_saved_while_a_slow_case_runs(tmp_path):
    """The periodic save does not wait for the next result: while a case hangs, the file already
    holds the cases finished before it."""
    out = tmp_path / "slow.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "conformance", "--spec", str(FAULTS / "pipe"), "run",
                             "--framework", "reference", "--adapter", "pipe_adapter:PipeRunner", "--out", str(out),
                             "--case", "healthy-0", "--case", "healthy-1", "--case", "pipe-slow", "--timeout", "30"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 25
        saved = []
        while time.monotonic() < deadline and len(saved) < 2:
            time.sleep(0.5)
            try:
                saved = results.read(out).cases
            except (OSError, ValueError):
                saved = []
        assert [c.id for c in saved] == ["healthy-0", "healthy-1"], "not saved while pipe-slow runs"
        assert proc.poll() is None, "the slow case was still running"
        workers = children(proc.pid)
        assert workers, "the run's worker process"
    finally:
        proc.kill()  # SIGKILL: the run cannot end its worker itself
        proc.communicate(timeout=30)  # returns once no process holds the run's stdout: the worker is gone too
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.2)
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()], "a worker outlived its run"


def children(pid: int) -> list[int]:
    return [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
            for c in (task / "children").read_text().split()]
