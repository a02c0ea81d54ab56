"""Data-parallel rank groups (engine/ranks.py): a rank that crashes, hangs or raises costs only its case, the group is
started again for the next one, and no rank outlives the run, a killed run included.

The test-only adapter faults/rank_adapter.py makes each rank the oracle on its own rows, started by a small launcher
as torchrun starts ranks; the spec in faults/ranks puts a healthy case between faults of rank 1."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from conformance import results
from conformance.__main__ import main
from conformance.engine.ranks import LOGS_PREFIX

FAULTS = Path(__file__).parent / "faults"
SPEC = FAULTS / "ranks"


@pytest.fixture(autouse=True)
def rank_adapter_importable(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAULTS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(FAULTS))


def marked(mark: str) -> list[int]:
    """The processes whose environment carries `mark`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as fh:
                    if mark.encode() in fh.read():
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_each_rank_fault_is_its_case_error_and_the_group_starts_again(tmp_path):
    out = tmp_path / "ranks.json"
    code = main(["--spec", str(SPEC), "run", "--framework", "reference", "--adapter", "rank_adapter:RankRunner",
                 "--replicas", "2", "--timeout", "4", "--out", str(out)])
    assert code == 0
    by_id = {c.id: c for c in results.read(out).cases}
    assert by_id["fault-crash"].verdict == "error" and by_id["fault-crash"].reason.startswith("rank 1 died: ")
    assert by_id["fault-hang"].verdict == "error" and by_id["fault-hang"].reason.startswith("rank 1 hung: no reply within")
    assert by_id["fault-raises"].reason.startswith("rank 1: RuntimeError: injected failure on rank 1")
    # rank 1 raised while rank 0 waited: the error, after a short grace, and a new group for the next case
    assert by_id["fault-raises-alone"].reason.startswith("rank 1: RuntimeError: injected failure on rank 1 alone")
    assert all(by_id[f"healthy-{n}"].verdict == "conform" for n in range(5))  # each after a fault: a new group
    assert "single-process" not in by_id  # a single-process case is no part of a data-parallel run


def test_a_launcher_that_starts_no_rank_fails_the_run_in_one_line(tmp_path, capsys):
    code = main(["--spec", str(SPEC), "run", "--framework", "reference", "--adapter", "rank_adapter:NoLauncherRunner",
                 "--replicas", "2", "--out", str(tmp_path / "none.json")])
    err = capsys.readouterr().err
    assert code != 0
    assert "0 of 2 ranks joined (the launcher exited): launcher: no such host" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("stop", [None, signal.SIGTERM])
def test_no_rank_outlives_the_run_or_a_stopped_run(tmp_path, stop):
    mark = f"RANKS_TEST_MARK={uuid.uuid4().hex}"
    env = {**os.environ, mark.split("=")[0]: mark.split("=")[1]}
    cmd = [sys.executable, "-m", "conformance", "--spec", str(SPEC), "run", "--framework", "reference",
           "--adapter", "rank_adapter:RankRunner", "--replicas", "2", "--timeout", "30", "--out", str(tmp_path / "r.json")]
    if stop is None:
        cmd += ["-k", "healthy"]
    logs_before = set(Path(tempfile.gettempdir()).glob(f"{LOGS_PREFIX}*"))
    run = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if stop is not None:  # once the ranks have started, while rank 1 hangs
        deadline = time.monotonic() + 60
        while len(marked(mark)) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)
        run.send_signal(stop)
    run.wait(120)
    time.sleep(0.5)  # the kernel ends what died with its parent
    assert marked(mark) == []
    assert set(Path(tempfile.gettempdir()).glob(f"{LOGS_PREFIX}*")) <= logs_before  # nor the ranks' logs
