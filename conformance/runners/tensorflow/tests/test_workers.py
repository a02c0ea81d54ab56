"""workers.py, the tensorflow room's several-nodes start: each worker gets TF_CONFIG naming the whole cluster and
its own index, and one failing worker ends its node's others with its exit status; on one node the replicas run
in the run's own process."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.runners.base import Unavailable
from conformance.runners.tensorflow.runner import TensorFlowRunner, launch_workers

SCRIPT = """
import json, os, sys, time
config = json.loads(os.environ["TF_CONFIG"])
index = config["task"]["index"]
with open(sys.argv[0] + f".{index}", "w") as out:
    json.dump({"config": config, "marked": os.environ.get("CONFORMANCE_TF_WORKER")}, out)
if index == int(os.environ["FAILING"]):
    sys.exit(3)
time.sleep(0 if os.environ["FAILING"] == "-1" else 600)
"""


def start(tmp_path, failing: int, first=2, count=2) -> tuple[int, float, Path]:
    script = tmp_path / "worker.py"
    script.write_text(SCRIPT)
    cluster = ",".join(f"127.0.0.1:{2000 + i}" for i in range(4))
    began = time.monotonic()
    code = subprocess.run([sys.executable, "-m", "conformance.runners.tensorflow.workers", str(first), str(count),
                           cluster, str(script)], env={**os.environ, "FAILING": str(failing)},
                          timeout=120).returncode
    return code, time.monotonic() - began, script


def test_each_worker_is_told_the_cluster_and_its_index(tmp_path):
    code, _, script = start(tmp_path, failing=-1)
    assert code == 0
    for index in (2, 3):
        told = json.loads(script.with_name(f"worker.py.{index}").read_text())
        assert told["config"] == {"cluster": {"worker": [f"127.0.0.1:{2000 + i}" for i in range(4)]},
                                  "task": {"type": "worker", "index": index}}
        assert told["marked"] == "1"
    assert not script.with_name("worker.py.0").exists()


def test_a_failing_worker_ends_the_others_with_its_status(tmp_path):
    code, took, _ = start(tmp_path, failing=3)
    assert code == 3 and took < 60  # the other worker sleeps 600 s unless it is ended


def test_one_node_runs_its_replicas_in_process_and_several_start_workers():
    assert TensorFlowRunner.parallelism.launcher(1) is None  # MirroredStrategy, in the run's worker
    assert TensorFlowRunner.parallelism.launcher(2).launch is launch_workers


def test_workers_on_another_host_are_refused_in_one_line():
    with pytest.raises(Unavailable, match="TF_CONFIG names every worker's host:port"):
        launch_workers(2, "script.py", 2, 0, "192.0.2.1:1234")


def test_the_nodes_share_one_cluster_listing():
    master = "127.0.0.1:1"
    argvs = [launch_workers(4, "script.py", 2, node, master) for node in (0, 1)]
    assert argvs[0][-2] == argvs[1][-2] and argvs[0][-2].split(",")[0] == master
    assert [argv[-4:-2] for argv in argvs] == [["0", "2"], ["2", "2"]]
