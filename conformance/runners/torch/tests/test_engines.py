"""The sharded engines (--engine fsdp1, fsdp2): what the adapter reads of a sharded model is what a user gathering it
would read, so a frozen layer reads no gradient, a no_sync step's gradients read as each rank's own, and an
unused layer reads as each engine leaves it."""
import json
import subprocess
import sys

import pytest

CASES = ["dp-frozen-layer[sgd]", "dp-no-sync-accumulation[sgd]", "dp-unused-layer-undeclared[sgd]",
         "dp-replica-only-layer[sgd]"]


def _run(tmp_path, engine):
    out = tmp_path / f"{engine}.json"
    selection = [arg for case in CASES for arg in ("--case", case)]
    done = subprocess.run([sys.executable, "-m", "conformance", "run", "--framework", "torch", "--replicas", "2",
                           "--engine", engine, *selection, "--out", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {case["id"]: case for case in json.loads(out.read_text())["cases"]}


def _variants(record):
    return [v["name"] for v in (record["documented"] or {}).get("variants", [])]


@pytest.mark.parametrize("engine", ["fsdp1", "fsdp2"])
def test_sharded_runs_read_whole_tensors_as_each_engine_leaves_them(tmp_path, engine):
    cases = _run(tmp_path, engine)
    assert cases["dp-frozen-layer[sgd]"]["verdict"] == "conform"  # no gradient: not the zeros a summon gives
    assert cases["dp-no-sync-accumulation[sgd]"]["verdict"] == "conform"
    unused, replica_only = cases["dp-unused-layer-undeclared[sgd]"], cases["dp-replica-only-layer[sgd]"]
    if engine == "fsdp1":
        assert unused["verdict"] == "divergence" and _variants(unused) == ["sharded-unused-grads-zero"]
        assert replica_only["verdict"] == "conform"
    else:
        assert unused["verdict"] == "conform"
        assert replica_only["verdict"] == "divergence"
        assert "replica-grads-packed-by-position" in _variants(replica_only)
