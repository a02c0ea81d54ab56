"""Fault injection: crashes, hangs and exceptions cost only their own case.

The test-only spec in faults/spec puts a healthy case between injected faults; the test-only
adapter faults/fault_adapter.py (the oracle plus the fault a layer names) runs them in the worker.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import results
from conformance.__main__ import main

FAULTS = Path(__file__).parent / "faults"
SPEC = FAULTS / "spec"
EXPECTED = {
    "fault-segfault": ("error", "crashed: SIGSEGV"),
    "fault-abort": ("error", "crashed: SIGABRT"),
    "fault-exit": ("error", "worker exited with status 7"),
    "fault-hang": ("error", "timed out after 2 s"),
    "fault-hog": ("error", "MemoryError: Unable to allocate"),
    "fault-raises": ("error", "RuntimeError: injected failure"),
    "fault-unsupported": ("unsupported", "injected: cannot express this"),
    "fault-nan": ("divergence", "value nan.weight @ step 0: expected reference"),
    # a string that cannot be encoded is kept as its escape, and the run saves
    "fault-surrogate": ("error", "RuntimeError: cannot open /data/caf\\udce9.bin"),
    # a reason of 10 MB is cut: one case never makes a results file huge
    "fault-verbose": ("error", "RuntimeError: xxxx"),
}


def run_cli(*argv):
    return main(["--spec", str(SPEC), "run", "--framework", "reference",
                 "--adapter", "fault_adapter:FaultRunner", *argv])


@pytest.fixture(autouse=True)
def fault_adapter_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(FAULTS))  # the spawned worker inherits sys.path


def test_every_fault_is_recorded_and_the_rest_still_runs(tmp_path, capsys):
    out = tmp_path / "faults.json"
    assert run_cli("--out", str(out)) == 0
    doc = results.read(out)
    by_id = {c.id: c for c in doc.cases}
    assert doc.complete and len(doc.cases) == 21
    for case_id, (verdict, reason) in EXPECTED.items():
        record = by_id[case_id]
        assert record.verdict == verdict, case_id
        assert record.reason.startswith(reason), (case_id, record.reason)
        assert "\n" not in record.reason
    healthy = [c for c in doc.cases if c.id.startswith("healthy-")]
    assert len(healthy) == 11 and all(c.verdict == "conform" and c.checks for c in healthy)
    assert len(by_id["fault-verbose"].reason) == results.MAX_TEXT and out.stat().st_size < 1_000_000
    printed = capsys.readouterr().out
    assert "[ 2/21] error                    fault-segfault  -- crashed: SIGSEGV" in printed


def test_command_line_timeout_overrides_the_spec(tmp_path, capsys):
    out = tmp_path / "hang.json"
    assert run_cli("--case", "fault-hang", "--case", "healthy-4", "--timeout", "0.5", "--out", str(out)) == 0
    by_id = {c.id: c for c in results.read(out).cases}
    assert by_id["fault-hang"].reason == "timed out after 0.5 s"
    assert by_id["healthy-4"].verdict == "conform"


def test_unknown_case_id(capsys):
    assert run_cli("--case", "fault-nope") == 2
    err = capsys.readouterr().err
    assert "unknown case id 'fault-nope'" in err and len(err.strip().splitlines()) == 1


def test_only_errors_reruns_just_the_errors(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert run_cli("--case", "healthy-0", "--case", "fault-raises", "--out", str(out)) == 0
    before = {c.id: c for c in results.read(out).cases}
    assert run_cli("--case", "healthy-0", "--case", "fault-raises", "--only-errors", "--out", str(out)) == 0
    printed = capsys.readouterr().out
    assert "1 instances to run, 1 kept" in printed and "fault-raises" in printed.splitlines()[-2]
    after = {c.id: c for c in results.read(out).cases}
    assert after["healthy-0"] == before["healthy-0"]  # kept as it was, not re-run


def test_resume_refuses_a_different_spec(tmp_path, capsys):
    out = tmp_path / "x.json"
    assert run_cli("--case", "healthy-0", "--out", str(out)) == 0
    doc = json.loads(out.read_text())
    doc["environment"]["spec_hash"] = "0" * 16
    out.write_text(json.dumps(doc))
    assert run_cli("--resume", "--out", str(out)) == 2
    assert "--resume: " in capsys.readouterr().err


def test_resume_without_results_file(tmp_path, capsys):
    assert run_cli("--resume", "--out", str(tmp_path / "none.json")) == 2
    assert "no results file at" in capsys.readouterr().err


def test_sigterm_writes_finished_cases_then_resume_completes(tmp_path):
    out = tmp_path / "t.json"
    cmd = [sys.executable, "-m", "conformance", "--spec", str(SPEC), "run", "--framework", "reference",
           "--adapter", "fault_adapter:FaultRunner", "--out", str(out),
           "--case", "healthy-0", "--case", "healthy-1", "--case", "fault-hang", "--case", "healthy-4"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(cmd + ["--timeout", "60"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    seen = []
    while len(seen) < 3:  # header + the two healthy cases; the hang is now in flight
        seen.append(proc.stdout.readline())
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert "interrupted: 2 of 4 cases written" in err
    partial = results.read(out)
    assert not partial.complete and [c.id for c in partial.cases] == ["healthy-0", "healthy-1"]

    done = subprocess.run(cmd + ["--resume", "--timeout", "0.5"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "2 instances to run, 2 kept" in done.stdout
    final = results.read(out)
    assert final.complete and [c.id for c in final.cases] == ["healthy-0", "healthy-1", "fault-hang", "healthy-4"]
    assert final.cases[2].reason == "timed out after 0.5 s" and final.cases[3].verdict == "conform"
