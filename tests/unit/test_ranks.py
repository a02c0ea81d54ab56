"""Data-parallel rank groups (engine/ranks.py): a rank that crashes, hangs or raises costs only its case, the group is
started again for the next one, and no rank outlives the run, a killed run included.

The test-only adapter faults/rank_adapter.py makes each rank the oracle on its own rows, started by a small launcher
as torchrun starts ranks; the spec in faults/ranks puts a healthy case between faults of rank 1."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from conformance import results
from conformance.__main__ import main
from conformance.engine.ranks import rank_cause
from conformance.kernel.processes import RUN_FOLDER_PREFIX

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
    assert by_id["fault-crash"].verdict == "error"
    # the rank's own words, not the launcher's line after them ("launcher: a rank exited with status -11")
    assert by_id["fault-crash"].reason == "rank 1 died: Fatal Python error: Segmentation fault"
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


def test_several_nodes_each_start_their_launcher_and_the_ranks_meet_as_one_group(tmp_path, monkeypatch):
    launches = tmp_path / "launches"
    monkeypatch.setenv("FAKE_LAUNCHES", str(launches))
    out = tmp_path / "nodes.json"
    code = main(["--spec", str(SPEC), "run", "--framework", "reference", "--adapter", "rank_adapter:RankRunner",
                 "--replicas", "2", "--nodes", "2", "--timeout", "4", "--out", str(out), "-k", "-"])
    assert code == 0
    by_id = {c.id: c for c in results.read(out).cases}
    assert all(by_id[f"healthy-{n}"].verdict == "conform" for n in range(5))
    assert by_id["fault-crash"].reason.startswith("rank 1 died: ")  # node 1's rank, named by its global rank
    assert results.read(out).environment.nodes == 2
    # one launcher per node, at the start and at each restart after a fault
    lines = sorted(launches.read_text().splitlines())
    starts = lines.count("ranks 0 to 0")
    assert starts >= 2 and lines == ["ranks 0 to 0"] * starts + ["ranks 1 to 1"] * starts


def this_hosts_address() -> str | None:
    """The address this machine's outgoing traffic would leave from (no packet is sent), unless a loopback one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # a documentation address: only the route is looked up
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


@pytest.mark.skipif(this_hosts_address() is None, reason="this machine has no address but a loopback one")
def test_another_hosts_node_is_a_command_to_run_there_and_its_ranks_join(tmp_path):
    out = tmp_path / "remote.json"
    run = subprocess.Popen([sys.executable, "-m", "conformance", "--spec", str(SPEC), "run", "--framework", "reference",
                            "--adapter", "rank_adapter:RankRunner", "--replicas", "2", "--nodes", "2",
                            "--node-address", this_hosts_address(), "-k", "healthy-0", "--out", str(out)],
                           stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    line = run.stderr.readline()
    command = re.fullmatch(r"node 1 of 2: on that host, in this checkout, within \d+ s, run: (.+)\n", line)
    assert command, line
    other = tmp_path / "other-host"  # the other host's working folder
    other.mkdir()
    node = subprocess.Popen(command.group(1), shell=True, cwd=other, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert run.wait(120) == 0
    finally:
        os.killpg(node.pid, signal.SIGKILL)
    assert [c.verdict for c in results.read(out).cases] == ["conform"]


def test_nodes_need_a_launcher_and_replicas_that_split_over_them(tmp_path, capsys):
    assert main(["--spec", str(SPEC), "run", "--framework", "reference", "--adapter", "rank_adapter:RankRunner",
                 "--replicas", "2", "--nodes", "4", "--out", str(tmp_path / "a.json")]) == 2
    assert "--nodes 4: the replicas (--replicas 2) must split evenly over the nodes" in capsys.readouterr().err
    assert main(["--spec", str(SPEC), "run", "--framework", "reference", "--replicas", "2", "--nodes", "2",
                 "--out", str(tmp_path / "b.json")]) != 0
    err = capsys.readouterr().err
    assert "reference runs its replicas in one process, with no launcher: it has no --nodes" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("stop", [None, signal.SIGTERM])
def test_no_rank_outlives_the_run_or_a_stopped_run(tmp_path, stop):
    """Nor what the ranks wrote to their temporary folder: their logs, and a file each rank leaves there."""
    mark = f"RANKS_TEST_MARK={uuid.uuid4().hex}"
    left = f"left-by-a-rank-{uuid.uuid4().hex}-"
    env = {**os.environ, mark.split("=")[0]: mark.split("=")[1], "FAKE_LEAVE_TEMP": left}
    cmd = [sys.executable, "-m", "conformance", "--spec", str(SPEC), "run", "--framework", "reference",
           "--adapter", "rank_adapter:RankRunner", "--replicas", "2", "--timeout", "30", "--out", str(tmp_path / "r.json")]
    if stop is None:
        cmd += ["-k", "healthy"]
    system = Path(tempfile.gettempdir())
    runs_before = set(system.glob(f"{RUN_FOLDER_PREFIX}*"))
    run = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if stop is not None:  # once the ranks have started, while rank 1 hangs
        deadline = time.monotonic() + 60
        while len(marked(mark)) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)
        assert list(system.glob(f"{RUN_FOLDER_PREFIX}*/{left}*"))  # the ranks wrote into the run's own folder
        run.send_signal(stop)
    run.wait(120)
    time.sleep(0.5)  # the kernel ends what died with its parent
    assert marked(mark) == []
    assert set(system.glob(f"{RUN_FOLDER_PREFIX}*")) <= runs_before  # nor the ranks' logs and files
    assert list(system.glob(f"{left}*")) == []


def test_repro_of_a_data_parallel_case_starts_the_rooms_ranks(capsys):
    """The site's `repro ... --replicas 2` line: the case observed by a rank group its launcher starts, as `run`
    observes it, and nothing of the group left behind."""
    before = set(Path(tempfile.gettempdir()).glob(f"{RUN_FOLDER_PREFIX}*"))
    code = main(["--spec", str(SPEC), "repro", "--framework", "reference", "--adapter", "rank_adapter:RankRunner",
                 "--replicas", "2", "healthy-0"])
    out = capsys.readouterr().out
    assert code == 0 and "2 replicas" in out and "reproduces every check" in out, out
    assert set(Path(tempfile.gettempdir()).glob(f"{RUN_FOLDER_PREFIX}*")) <= before
    code = main(["--spec", str(SPEC), "repro", "--framework", "reference", "--adapter", "rank_adapter:RankRunner",
                 "--replicas", "2", "fault-raises"])
    assert code == 1 and "rank 1: RuntimeError: injected failure on rank 1" in capsys.readouterr().err


def test_when_no_rank_replies_each_is_named_not_rank_0_alone(tmp_path):
    out = tmp_path / "both.json"
    assert main(["--spec", str(FAULTS / "ranks_both"), "run", "--framework", "reference", "--adapter",
                 "rank_adapter:RankRunner", "--replicas", "2", "--timeout", "3", "--out", str(out)]) == 0
    (case,) = results.read(out).cases
    assert case.verdict == "error" and case.reason.startswith("ranks 0 and 1 hung: no reply within"), case.reason


def test_strangers_on_the_coordinators_port_neither_end_nor_stall_the_run(tmp_path, monkeypatch):
    """Before its ranks, the launcher opens an idle connection to the coordinator and sends junk on another:
    neither proves the key, so both are ignored and the ranks join as usual."""
    monkeypatch.setenv("FAKE_STRANGERS", "1")
    out = tmp_path / "strangers.json"
    started = time.monotonic()
    assert main(["--spec", str(SPEC), "run", "--framework", "reference", "--adapter", "rank_adapter:RankRunner",
                 "--replicas", "2", "--case", "healthy-0", "--case", "healthy-1", "--out", str(out)]) == 0
    assert [c.verdict for c in results.read(out).cases] == ["conform", "conform"]
    assert time.monotonic() - started < 60  # not the join timeout


def test_a_killed_runs_temporary_folder_is_removed_by_the_next_run(tmp_path):
    """A run killed with SIGKILL cannot remove its temporary folder (its ranks' logs among what it holds): the next
    run removes the folders whose run is gone, and keeps those of runs still going (this process's own tag here)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = Path(tempfile.mkdtemp(prefix=f"{RUN_FOLDER_PREFIX}{dead.pid}-123"))
    (orphan / "node-0").mkdir()
    alive = Path(tempfile.mkdtemp(prefix=f"{RUN_FOLDER_PREFIX}{os.getpid()}-456"))
    try:
        assert main(["--spec", str(SPEC), "run", "--framework", "reference", "--adapter", "rank_adapter:RankRunner",
                     "--replicas", "2", "--case", "healthy-0", "--out", str(tmp_path / "r.json")]) == 0
        assert not orphan.exists() and alive.exists()
    finally:
        shutil.rmtree(alive, ignore_errors=True)
        shutil.rmtree(orphan, ignore_errors=True)


LOGS = Path(__file__).parent / "faults" / "launcher_logs"


@pytest.mark.parametrize("log, script, cause", [
    # what torchrun (torch 2.13), paddle's launch (3.3) and msrun (MindSpore 2.10) printed when rank 1 of 2 raised
    # or crashed, the paths shortened; each ends with the launcher's own traceback, report or banner
    ("torchrun.log", "fail.py", "RuntimeError: NCCL-ish failure: tensor shape mismatch in all_reduce"),
    ("torchrun-segfault.log", "crash.py", "Fatal Python error: Segmentation fault"),
    ("paddle-launch.log", "fail.py", "RuntimeError: NCCL-ish failure: tensor shape mismatch in all_reduce"),
    ("msrun.log", "msfail.py", "RuntimeError: NCCL-ish failure: tensor shape mismatch in all_reduce"),
])
def test_a_failure_is_the_ranks_own_words_not_the_launchers_banner(log, script, cause):
    assert rank_cause((LOGS / log).read_text(), script) == cause


def test_without_a_ranks_words_the_cause_is_the_last_line_before_the_launchers_own_traceback():
    lines = (LOGS / "torchrun.log").read_text().splitlines()
    del lines[6:10]  # rank 1's traceback: as if it had been killed without a word
    assert "failed (exitcode: 1) local_rank: 1" in rank_cause("\n".join(lines), "fail.py")
    assert rank_cause("\n=====\n\n", "x.py") == ""
