"""Reliability, round 3: what crosses the worker's pipe is framed and bounded, finished results are
saved while a slow case runs, and a worker's own exit is told from a kill.

The test-only spec in faults/pipe puts a healthy case between faults a worker could put on its pipe
(faults/pipe_adapter.py); each healthy case must conform with its own observation."""
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conformance import results
from conformance.kernel import processes
from conformance.spec import SpecError, load_spec

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


def test_a_framework_that_prints_to_a_closed_stdout_still_runs(tmp_path):
    """`run ... | head -1`: the reader is gone; what the framework prints costs no case."""
    out = tmp_path / "closed.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "conformance", "--spec", str(FAULTS / "pipe"), "run",
                             "--framework", "reference", "--adapter", "pipe_adapter:PipeRunner", "--out", str(out),
                             "--case", "pipe-prints", "--case", "healthy-0"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert {c.id: c.verdict for c in results.read(out).cases} == {"pipe-prints": "conform", "healthy-0": "conform"}


def test_a_warm_up_at_the_adapters_start_is_not_charged_to_the_first_case(tmp_path):
    out = tmp_path / "warm.json"
    env = {**os.environ, "WARM_UP_S": "4",
           "PYTHONPATH": os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "conformance", "--spec", str(FAULTS / "pipe"), "run",
                           "--framework", "reference", "--adapter", "pipe_adapter:WarmingRunner", "--out", str(out),
                           "--case", "healthy-0", "--timeout", "2"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert {c.id: c.verdict for c in results.read(out).cases} == {"healthy-0": "conform"}


def test_a_process_the_worker_started_in_a_session_of_its_own_ends_with_the_run(tmp_path):
    pid_file = tmp_path / "daemon.pid"
    env = {**os.environ, "DAEMON_PID": str(pid_file),
           "PYTHONPATH": os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "conformance", "--spec", str(FAULTS / "pipe"), "run",
                           "--framework", "reference", "--adapter", "pipe_adapter:PipeRunner",
                           "--out", str(tmp_path / "r.json"), "--case", "pipe-daemon"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    daemon = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{daemon}").exists() and \
            Path(f"/proc/{daemon}/stat").read_text().split()[2] != "Z":
        time.sleep(0.1)
    gone = not Path(f"/proc/{daemon}").exists() or Path(f"/proc/{daemon}/stat").read_text().split()[2] == "Z"
    if not gone:
        os.kill(daemon, 9)
    assert gone, "a process the worker started outlived the run"


@pytest.mark.parametrize("tmpdir_before", [None, "system"])
def test_a_runs_temporary_files_go_with_it_and_its_tmpdir_is_restored(monkeypatch, tmpdir_before):
    """tag_run gives the processes a run starts a private temporary folder (a killed process removes none of its
    temporary files); end_run removes it and gives this process back its TMPDIR, set or not."""
    system = tempfile.gettempdir()
    if tmpdir_before is None:
        monkeypatch.delenv("TMPDIR", raising=False)
    else:
        monkeypatch.setenv("TMPDIR", system)
    tag = processes.tag_run()
    try:
        folder = Path(os.environ["TMPDIR"])
        assert folder.parent == Path(system) and folder.stat().st_mode & 0o777 == 0o700
        assert processes.run_folder() == str(folder)
        left = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.mkstemp()[1])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        assert Path(left).parent == folder
    finally:
        processes.end_run(tag)
    assert not folder.exists() and processes.TAG not in os.environ and processes.run_folder() is None
    assert os.environ.get("TMPDIR") == (None if tmpdir_before is None else system)


def _ended(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return True
        time.sleep(0.1)
    os.kill(pid, 9)
    return False


def _daemon_pid(pid_file: Path, proc) -> int:
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert pid_file.exists(), "the daemon never started"
    return int(pid_file.read_text())


def _default_stop_signals():
    """What a terminal gives the audit: a test run under nohup (SIGHUP ignored, and inherited) must not make it
    ignore the SIGHUP the test sends."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


CONTAINED = pytest.mark.skipif(not processes.can_contain(), reason="no writable cgroup v2 hierarchy here")
USER_DAEMON = """
import os, sys, time
sys.path.insert(0, {faults!r})
from pipe_adapter import start_daemon

def build():
    start_daemon({pid_file!r}, clean_env=True)
    time.sleep(600)
"""


@CONTAINED
def test_a_clean_environment_daemon_ends_with_a_sigkilled_run(tmp_path):
    """A case starts a process that left the session and cleared its environment, then the run is killed
    with SIGKILL, which gives it no chance to end anything: the run's cgroup ends it."""
    pid_file = tmp_path / "daemon.pid"
    env = {**os.environ, "DAEMON_PID": str(pid_file),
           "PYTHONPATH": os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.Popen([sys.executable, "-m", "conformance", "--spec", str(FAULTS / "pipe"), "run",
                            "--framework", "reference", "--adapter", "pipe_adapter:PipeRunner", "--timeout", "300",
                            "--out", str(tmp_path / "r.json"), "--case", "pipe-cleandaemon"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    daemon = _daemon_pid(pid_file, run)
    run.kill()
    run.wait(30)
    assert _ended(daemon, 15), "a process a case started outlived the SIGKILLed run"


@CONTAINED
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_a_clean_environment_daemon_ends_with_a_stopped_audit(tmp_path, stop):
    pid_file = tmp_path / "daemon.pid"
    (tmp_path / "user.py").write_text(USER_DAEMON.format(faults=str(FAULTS), pid_file=str(pid_file)))
    audit = subprocess.Popen([sys.executable, "-m", "conformance", "audit", f"{tmp_path / 'user.py'}:build",
                              "--framework", "torch", "--timeout", "300"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=_default_stop_signals)
    daemon = _daemon_pid(pid_file, audit)
    audit.send_signal(stop)
    audit.wait(30)
    assert _ended(daemon, 15), f"a process the audited build started outlived the audit ({stop.name})"


# ---------------------------------------------------------------- the pipe at the byte level
import pickle  # noqa: E402
import struct  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FRAMES = st.one_of(
    st.binary(max_size=40),  # anything at all
    st.binary(max_size=32).map(lambda b: struct.pack("!i", len(b) + 8) + b),  # a length that overshoots
    st.binary(min_size=1, max_size=32).map(lambda b: struct.pack("!i", len(b)) + b),  # a whole frame of junk
    st.tuples(st.integers(-3, 3), st.text(max_size=8), st.sampled_from([("ok", None), ("error", "x"), "junk"])).map(
        lambda t: (lambda p: struct.pack("!i", len(p)) + p)(pickle.dumps(t))),  # a reply to a request not asked
    st.integers(-2**31, 2**31 - 1).map(lambda n: struct.pack("!i", n)),  # a bare length, negative or huge
)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(FRAMES)
def test_bytes_on_the_pipe_cost_one_case_at_most(tmp_path_factory, frame):
    """Bytes a worker (or a process it forked) writes to the pipe instead of its reply: the case is an
    error or, where they form the very reply asked for, checked as one; the next case conforms."""
    folder = tmp_path_factory.mktemp("bytes")
    (folder / "bytes").write_bytes(frame)
    env = {**os.environ, "PIPE_BYTES": str(folder / "bytes"),
           "PYTHONPATH": os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")])}
    out = folder / "r.json"
    done = subprocess.run([sys.executable, "-m", "conformance", "--spec", str(FAULTS / "pipe"), "run",
                           "--framework", "reference", "--adapter", "pipe_adapter:PipeRunner", "--out", str(out),
                           "--case", "pipe-bytes", "--case", "healthy-0", "--timeout", "2"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    by_id = {c.id: c for c in results.read(out).cases}
    assert by_id["pipe-bytes"].verdict == "error" and "\n" not in by_id["pipe-bytes"].reason
    assert by_id["healthy-0"].verdict == "conform"


# ---------------------------------------------------------------- what the spec validation missed
from conformance.__main__ import main  # noqa: E402
from test_schema import GOOD, error_of  # noqa: E402


@pytest.mark.parametrize("old, new, message", [
    ("{step: 0, grad:", "{step: [], grad:", "cases.0.expect.0.step: an empty list names no step"),
    ("a: {linear: [2, 2]}", "a.b: {linear: [2, 2]}", "layer name 'a.b': letters, digits, _ and - only"),
    ("    model:\n", "    variants: {x: {matrix.optimizer: [sgd]}}\n    model:\n", "variant 'x' sets 'matrix.optimizer'"),
    ("a: {linear: [2, 2]}\n", "a: {linear: [1024, 1024]}\n", "the run would observe"),  # with 30 steps: see below
    ("      - {path: [a]}\n", "      - {path: [a], batch: 99999999999999999999}\n", "less than or equal to 1000000"),
])
def test_the_spec_refuses_what_costs_or_confuses(tmp_path, old, new, message):
    text = GOOD.replace(old, new, 1)
    if "1024" in new:
        text = text.replace("      - {path: [a]}\n", "      - {path: [a], repeat: 30}\n")
    assert message in error_of(tmp_path, text)


def test_yml_files_are_not_skipped_without_a_word(tmp_path):
    (tmp_path / "a.yaml").write_text(GOOD)
    (tmp_path / "b.yml").write_text(GOOD)
    with pytest.raises(SpecError, match="b.yml: spec files end in .yaml"):
        load_spec(tmp_path)


def test_an_observation_with_a_number_too_large_for_a_float_is_that_cases_error():
    from conformance.engine.scenario import BadObservation, checked, observe
    from conformance.oracle.reference import ReferenceRunner
    inst = next(i for i in load_spec() if i.case.id == "seed-2-plain-list-sublayers")
    obs = observe(ReferenceRunner(), inst.case)
    obs.steps[0].loss = 10 ** 400
    with pytest.raises(BadObservation, match="step 0 loss is int, too large for a float"):
        checked(obs, inst.case, observe(ReferenceRunner(), inst.case))


# ---------------------------------------------------------------- inputs and outputs of report and run
def test_report_reads_no_fifo_device_or_huge_file_and_writes_its_page(tmp_path, capsys):
    folder = tmp_path / "results"
    folder.mkdir()
    os.mkfifo(folder / "fifo.json")
    (folder / "zero.json").symlink_to("/dev/zero")
    with open(folder / "huge.json", "wb") as fh:
        fh.truncate(results.MAX_RESULTS_BYTES + 1)
    assert main(["report", "--results", str(folder), "--out", str(tmp_path / "site"), "--bench", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "fifo.json: malformed: not a regular file" in err and "zero.json: malformed: not a regular file" in err
    assert "huge.json: malformed: larger than" in err and (tmp_path / "site" / "index.html").is_file()


def test_report_replaces_its_files_whole_and_never_follows_a_link(tmp_path, capsys):
    outside = tmp_path / "precious.html"
    outside.write_text("keep me")
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").symlink_to(outside)
    (tmp_path / "results").mkdir()
    assert main(["report", "--results", str(tmp_path / "results"), "--out", str(site), "--bench", str(tmp_path)]) == 0
    assert outside.read_text() == "keep me" and not (site / "index.html").is_symlink()
    assert not list(site.glob(".*.tmp"))


def test_report_refuses_a_missing_results_folder(tmp_path, capsys):
    (tmp_path / "results").mkdir()
    assert main(["report", "--results", str(tmp_path / "nope"), str(tmp_path / "results"),
                 "--out", str(tmp_path / "site")]) == 2
    assert "nope: no such folder (the page shows the other folders)" in capsys.readouterr().err
    assert (tmp_path / "site" / "index.html").is_file()


def test_csv_cells_from_results_are_text_and_findings_hold_no_html(tmp_path):
    from conformance.report.page import build
    from conftest import env, record
    folder = tmp_path / "results"
    inst = load_spec()[0]
    hostile = record(inst, "error", reason="=HYPERLINK(\"http://x\") <script>alert(1)</script>")
    results.write(results.Results(complete=True, environment=env("torch", "=1+1"), cases=[hostile]), folder / "t.json")
    build([folder], tmp_path / "site", bench_dir=None)
    csv = (tmp_path / "site" / "summary.csv").read_text()
    assert "'=HYPERLINK" in csv and ",=" not in csv
    assert "<script>" not in (tmp_path / "site" / "findings.md").read_text()


def test_run_out_replaces_only_a_results_file_of_the_same_run(tmp_path, capsys):
    other = tmp_path / "notes.txt"
    other.write_text("my notes")
    assert main(["run", "--framework", "reference", "-k", "seed-2", "--out", str(other)]) == 2
    assert "exists and is not a results file" in capsys.readouterr().err and other.read_text() == "my notes"
    out = tmp_path / "r.json"
    assert main(["run", "--framework", "reference", "-k", "seed-2", "--out", str(out)]) == 0
    assert main(["run", "--framework", "reference", "-k", "seed-2", "--out", str(out)]) == 0  # the same run again
    doc = results.read(out)
    doc.environment.framework_version = "0.1"
    results.write(doc, out)
    assert main(["run", "--framework", "reference", "-k", "seed-2", "--out", str(out)]) == 2
    assert "holds the results of reference 0.1" in capsys.readouterr().err


def test_a_selection_given_to_resume_keeps_every_other_record(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["run", "--framework", "reference", "-k", "seed-", "--out", str(out)]) == 0
    before = {c.id for c in results.read(out).cases}
    assert main(["run", "--framework", "reference", "-k", "seed-2", "--resume", "--out", str(out)]) == 0
    assert main(["run", "--framework", "reference", "--case", "seed-5-unused-bn-grad", "--only-errors",
                 "--out", str(out)]) == 0
    after = results.read(out)
    assert {c.id for c in after.cases} == before and after.complete


def test_repro_says_unsupported_and_errors_in_one_line(capsys, monkeypatch):
    from conformance.oracle.reference import ReferenceRunner
    from conformance.runners.base import Unsupported

    def refuse(self, model, values):
        raise Unsupported("cannot express it here")
    monkeypatch.setattr(ReferenceRunner, "build", refuse)
    assert main(["repro", "seed-2-plain-list-sublayers", "--framework", "reference"]) == 0
    out, err = capsys.readouterr()
    assert "unsupported: cannot express it here" in out and "Traceback" not in out + err


def test_a_misspelled_backend_in_known_yaml_is_refused(tmp_path):
    from conformance.oracle.known import load_known
    (tmp_path / "torch" / "confirm").mkdir(parents=True)
    (tmp_path / "torch" / "confirm" / "adam_epsilon_hat.py").write_text("")
    (tmp_path / "torch" / "known.yaml").write_text(
        "variants:\n  - variant: adam-epsilon-hat\n    backends: [inductr]\n    reason: r\n    link: null\n")
    with pytest.raises(SpecError, match="known.yaml:2: backend 'inductr' is not one the torch room offers"):
        load_known("torch", tmp_path)


def test_an_adapter_version_that_cannot_name_a_file_stops_the_run_in_one_line(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(FAULTS))
    assert main(["run", "--framework", "reference", "--adapter", "hostile_adapter:LongVersionRunner", "-k", "seed-2",
                 "--out", "/tmp/never-written.json"]) == 4
    err = capsys.readouterr().err
    assert "the adapter's version is not a short printable word" in err and len(err.strip().splitlines()) == 1
