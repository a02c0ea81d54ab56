"""A hostile signal, reader or disk never loses finished results or crashes the run.

Runs use the test-only spec in faults/spec: its healthy cases on the reference adapter, or every
case on the fault-injecting adapter.
"""
import errno
import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import results, session
from conformance.engine import judge as execute
from conformance.__main__ import main
from conformance.oracle.reference import ReferenceRunner
from conformance.spec import SPEC_DIR, load_spec

FAULTS = Path(__file__).parent / "faults"
SPEC = FAULTS / "spec"
HEALTHY = [f"healthy-{n}" for n in range(9)]
STOP = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")])}


def run(capsys, *argv, spec=SPEC):
    try:
        code = main(["--spec", str(spec), *argv])
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def cases(*ids):
    return [arg for case_id in ids for arg in ("--case", case_id)]


@pytest.fixture
def sighup_guard():
    """Without a handler SIGHUP would end pytest itself; this one makes an unhandled one a plain failure."""
    def unhandled(signum, frame):
        raise RuntimeError("SIGHUP reached the test's own handler")
    previous = signal.signal(signal.SIGHUP, unhandled)
    yield
    signal.signal(signal.SIGHUP, previous)


# ---------------------------------------------------------------- stop signals
@pytest.mark.parametrize("signum", list(STOP), ids=lambda s: s.name)
def test_stop_signal_during_the_oracle_stops_the_run(tmp_path, capsys, monkeypatch, sighup_guard, signum):
    """The signal lands while the parent runs the reference oracle for the second case."""
    calls = []

    class SignalsItself(ReferenceRunner):
        def build(self, model, values):
            calls.append(1)
            if len(calls) == 2:
                os.kill(os.getpid(), signum)
            super().build(model, values)

    monkeypatch.setattr(execute, "ReferenceRunner", SignalsItself)
    out = tmp_path / "r.json"
    code, _, err = run(capsys, "run", "--framework", "reference", "--out", str(out), *cases(*HEALTHY[:4]))
    assert code == STOP[signum], err
    doc = results.read(out)
    assert not doc.complete and [c.id for c in doc.cases] == ["healthy-0"]  # the case in flight is not an error
    assert f"interrupted: 1 of 4 cases written to {out} (incomplete; stopped by {signum.name})" in err


def test_closed_stdout_does_not_stop_the_run(tmp_path):
    """`run ... | head -0`: the reader is gone before the first line."""
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "conformance", "--spec", str(SPEC), "run", "--framework",
                             "reference", "--out", str(out), *cases(*HEALTHY[:3])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert "Error" not in err
    doc = results.read(out)
    assert doc.complete and [c.id for c in doc.cases] == HEALTHY[:3]


# ---------------------------------------------------------------- command line
@pytest.mark.parametrize("value", ["3e6", "inf", "nan", "0", "-1", "soon"])
def test_timeout_out_of_range(tmp_path, capsys, value):
    code, _, err = run(capsys, "run", "--framework", "reference", "--out", str(tmp_path / "r.json"),
                       *cases("healthy-0"), "--timeout", value)
    assert code == 2 and "--timeout" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r.json").exists()


def _fifo(path):
    os.mkfifo(path)


def _symlink(path):
    (path.parent / "target.json").write_text("keep me")
    path.symlink_to("target.json")


@pytest.mark.parametrize("make, kind", [(_fifo, "FIFO"), (_symlink, "symbolic link"), (Path.mkdir, "directory")])
def test_out_is_only_a_regular_file_or_a_new_path(tmp_path, capsys, make, kind):
    out = tmp_path / "r.json"
    make(out)
    before = os.lstat(out)
    code, _, err = run(capsys, "run", "--framework", "reference", "--out", str(out), *cases("healthy-0"))
    assert code == 2 and f"--out {out} is a {kind}" in err and len(err.strip().splitlines()) == 1, err
    assert os.lstat(out) == before
    assert not (tmp_path / "target.json").exists() or (tmp_path / "target.json").read_text() == "keep me"


def test_empty_out_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "run", "--framework", "reference", "--out", "", *cases("healthy-0"))
    assert code == 2 and "--out: empty path" in err and len(err.strip().splitlines()) == 1, err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value, needle", [("", "--out: empty path"), ("file", "report --out file: exists and is not a folder")])
def test_report_out_is_a_folder(tmp_path, capsys, monkeypatch, value, needle):
    monkeypatch.chdir(tmp_path)
    Path("file").write_text("keep me")
    code, _, err = run(capsys, "report", "--results", "none", "--bench", "none", "--out", value)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"] and Path("file").read_text() == "keep me"


def test_repro_adapter_without_colon(capsys):
    code, _, err = run(capsys, "repro", "healthy-0", "--framework", "reference", "--adapter", "nocolon")
    assert code == 2 and "--adapter 'nocolon': expected MODULE:CLASS" in err
    assert len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- resume
def _edited(capsys, tmp_path, edit):
    out = tmp_path / "r.json"
    assert run(capsys, "run", "--framework", "reference", "--out", str(out), *cases(*HEALTHY[:3]))[0] == 0
    doc = json.loads(out.read_text())
    edit(doc)
    out.write_text(json.dumps(doc))
    return out


def test_resume_refuses_a_duplicated_case(tmp_path, capsys):
    out = _edited(capsys, tmp_path, lambda doc: doc["cases"].append(doc["cases"][0]))
    code, _, err = run(capsys, "run", "--framework", "reference", "--out", str(out), "--resume",
                       *cases(*HEALTHY[:4]))
    assert code == 2 and "cases.3.id: 'healthy-0' is also cases.0" in err, err
    assert len(err.strip().splitlines()) == 1


def test_resume_names_the_bad_field(tmp_path, capsys):
    out = _edited(capsys, tmp_path, lambda doc: doc["cases"][1].update(verdict="conformant"))
    code, _, err = run(capsys, "run", "--framework", "reference", "--out", str(out), "--resume",
                       *cases(*HEALTHY[:4]))
    assert code == 2 and "cases.1.verdict: Input should be 'conform', " in err, err
    assert "validation error" not in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- disk
@pytest.fixture
def failing_saves(monkeypatch):
    """Make the rename of saves number n (1: the first) fail with ENOSPC for n in the set returned."""
    monkeypatch.setattr(session, "SAVE_EVERY", 0)  # save after every case
    real, failing, seen = os.replace, set(), []

    def replace(src, dst):
        seen.append(dst)
        if len(seen) in failing:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return failing


def test_disk_full_mid_run_keeps_the_last_good_file_and_retries(tmp_path, capsys, failing_saves):
    out = tmp_path / "r.json"
    failing_saves.update({3, 4})  # saves: 1 at the start, 2-7 after each case, 8 at the end
    code, _, err = run(capsys, "run", "--framework", "reference", "--out", str(out), *cases(*HEALTHY[:6]))
    assert code == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(f"cannot save results to {out}: No space left on device" in x for x in lines)
    doc = results.read(out)
    assert doc.complete and [c.id for c in doc.cases] == HEALTHY[:6]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary file, no lock left


def test_disk_full_to_the_end_exits_5_and_keeps_the_last_good_file(tmp_path, capsys, failing_saves):
    out = tmp_path / "r.json"
    failing_saves.update(range(3, 10))
    code, _, err = run(capsys, "run", "--framework", "reference", "--out", str(out), *cases(*HEALTHY[:3]))
    assert code == 5, err
    assert f"cannot save results to {out}: No space left on device" in err.strip().splitlines()[-1]
    doc = results.read(out)  # the save after the first case
    assert not doc.complete and [c.id for c in doc.cases] == ["healthy-0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_second_run_on_the_same_out_fails_at_once(tmp_path, capsys):
    out = tmp_path / "r.json"
    with open(f"{out}.lock", "w") as held:  # what a run in progress holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242\n")
        held.flush()
        code, _, err = run(capsys, "run", "--framework", "reference", "--out", str(out), *cases("healthy-0"))
    assert code == 2 and f"{out}.lock" in err and "4242" in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    code, _, err = run(capsys, "run", "--framework", "reference", "--out", str(out), *cases("healthy-0"))
    assert code == 0, err
    assert not Path(f"{out}.lock").exists()


# ---------------------------------------------------------------- random stop moments
VERDICTS = {"fault-segfault": "error", "fault-abort": "error", "fault-exit": "error", "fault-hang": "error",
            "fault-hog": "error", "fault-raises": "error", "fault-unsupported": "unsupported",
            "fault-nan": "divergence", "fault-surrogate": "error", "fault-verbose": "error"}


@pytest.mark.parametrize("spec, adapter, seconds", [
    (SPEC, "fault_adapter:FaultRunner", 2.5), (SPEC_DIR, "conformance.oracle.reference:ReferenceRunner", 0.4)],
    ids=["faults", "reference"])
def test_stop_at_random_moments_then_resume(tmp_path, spec, adapter, seconds):
    """10 seeded moments per spec: a stop signal to the run (or its whole process group) somewhere
    within its `seconds` of cases. Each time the file holds finished cases only, each once, the
    ones kept before unchanged; the next run resumes it, and a last one completes it."""
    rng = random.Random(adapter)
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "conformance", "--spec", str(spec), "run", "--framework", "reference",
           "--adapter", adapter, "--timeout", "0.5", "--out", str(out)]
    spec_order = [i.id for i in load_spec(spec) if i.case.replicas == 1]  # a single-process run's
    expected = {i: VERDICTS.get(i, "conform") for i in spec_order}
    kept = {}
    for _ in range(10):
        signum, group, delay = rng.choice(list(STOP)), rng.random() < 0.5, rng.uniform(0, seconds)
        proc = subprocess.Popen(cmd + (["--resume"] if kept else []), env=ENV, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.stdout.readline()  # the header: the file is written
        time.sleep(delay)
        (os.killpg if group else os.kill)(proc.pid, signum)
        _, err = proc.communicate(timeout=60)
        # 0: finished first; -signum: the signal came after the final save, once the handlers were restored
        assert proc.returncode in (0, STOP[signum], -signum), err
        doc = results.read(out)
        ids = [c.id for c in doc.cases]
        assert doc.complete == (proc.returncode != STOP[signum]), err
        assert ids == [i for i in spec_order if i in ids]  # spec order, each once
        assert {c.id: c.verdict for c in doc.cases} == {i: expected[i] for i in ids}
        assert kept.keys() <= set(ids) and all(c == kept[c.id] for c in doc.cases if c.id in kept)
        kept = {c.id: c for c in doc.cases}
        if doc.complete:
            assert ids == spec_order
            out.unlink()
            kept = {}
    done = subprocess.run(cmd + (["--resume"] if kept else []), env=ENV, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    doc = results.read(out)
    assert doc.complete and [c.id for c in doc.cases] == spec_order
    assert all(c == kept[c.id] for c in doc.cases if c.id in kept)
