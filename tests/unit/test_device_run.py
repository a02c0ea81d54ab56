"""tools/device-run, the prepared GPU run, rehearsed without a framework: the reference oracle on the cpu."""
import shutil
import signal
import sys
import tarfile
import tempfile
import time

import pytest

from conformance import results
from tools import device_run


def test_a_rehearsal_packs_results_logs_and_its_log_into_one_folder(tmp_path):
    out = tmp_path / "out"
    code = device_run.main(["--device", "cpu", "--framework", "reference", "-k", "seed-1", "--budget", "300",
                            "--out", str(out), "--name", "rehearsal"])
    assert code == 0
    with tarfile.open(out / "results.tar.gz") as tar:
        names = tar.getnames()
        tar.extractall(tmp_path / "machines", filter="data")
    assert {"rehearsal/device-run.log", "rehearsal/logs/reference-cpu-eager-loop.log"} <= set(names)
    [found] = (tmp_path / "machines" / "rehearsal").glob("reference-*-cpu-eager-loop.json")
    doc = results.read(found)
    assert doc.complete and doc.cases and all("seed-1" in c.id for c in doc.cases)
    log = (out / "device-run.log").read_text()
    assert "1 of 1 jobs passed" in log and "torch: not asked for: skipped" in log


def test_the_budget_stops_what_still_runs_and_what_has_not_started(tmp_path):
    log = device_run.Log(tmp_path / "log")
    jobs = [device_run.Job(name, [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path,
                           tmp_path / f"{name}.log") for name in ("long", "later")]
    device_run.run_jobs(jobs, 1, time.monotonic() + 1, log, {})
    assert jobs[0].stopped and jobs[0].code == -signal.SIGTERM
    assert jobs[1].stopped and jobs[1].process is None
    text = (tmp_path / "log").read_text()
    assert "end long: stopped at the budget" in text and "not started later: the budget ran out" in text


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_cuda_without_a_gpu_runs_nothing_and_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert device_run.main(["--out", str(tmp_path / "out")]) == 3
    assert "no GPU: nvidia-smi sees none; nothing run" in capsys.readouterr().out
    assert not (tmp_path / "out" / "results.tar.gz").exists()
    assert list((tmp_path / "tmp").iterdir()) == []  # its scratch folder goes, on this way out too


@pytest.mark.parametrize("name", ["../..", "a/b", ".", "..", "/tmp/x", "a" * 65, ""])
def test_the_name_is_a_folders_name_never_a_path(tmp_path, name, capsys):
    with pytest.raises(SystemExit) as stop:
        device_run.main(["--device", "cpu", "--framework", "reference", "--out", str(tmp_path), "--name", name])
    assert stop.value.code == 2 and "--name" in capsys.readouterr().err
    assert not (tmp_path / "results.tar.gz").exists()


def test_a_signal_from_outside_ends_the_jobs_and_packs_what_finished(tmp_path, monkeypatch):
    import os
    import threading

    def plan(frameworks, devices, k, python, stage, work):
        (work / "reports" / "results").mkdir(parents=True)
        return [device_run.Job("long", [sys.executable, "-c", "import time; time.sleep(60)"], work,
                               stage / "logs" / "long.log")]
    monkeypatch.setattr(device_run, "plan", plan)
    threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    started = time.monotonic()
    code = device_run.main(["--device", "cpu", "--framework", "reference", "--out", str(tmp_path / "out"),
                            "--name", "stopped"])
    assert code == 128 + signal.SIGTERM and time.monotonic() - started < device_run.GRACE_S
    with tarfile.open(tmp_path / "out" / "results.tar.gz") as tar:
        assert {"stopped/device-run.log", "stopped/logs/long.log"} <= set(tar.getnames())
    log = (tmp_path / "out" / "device-run.log").read_text()
    assert "end long: stopped by SIGTERM" in log and "the contract checks are skipped" in log
    assert signal.getsignal(signal.SIGTERM) is not device_run._stop  # the caller's handlers are back
