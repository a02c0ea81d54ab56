"""A room's data-parallel run over two nodes on this host (docs/data-parallel.md, Several hosts): each node's ranks started by the
framework's launcher with its multi-node flags give the verdicts its one-node run recorded."""
from pathlib import Path

import pytest

from conformance import results
from conformance.__main__ import main
from conformance.runners import adapter_path, load_adapter, offers

CASE = "dp-unequal-shares-mean"  # each rank takes its own share of rows: ranks numbered across nodes matter


def test_two_nodes_here_give_the_one_node_verdicts(request, tmp_path):
    framework = request.config.getoption("framework")
    if not framework or request.config.getoption("replicas") == "1":
        pytest.skip("pass --framework F (and no --replicas 1) to check a room's data-parallel run over two nodes")
    adapter = load_adapter(adapter_path(framework), framework)
    if adapter.parallelism is None or adapter.parallelism.launcher(2) is None:
        pytest.skip(f"{framework} runs its replicas in one process: it has no --nodes")
    [run] = [r.replace(version=adapter.version()) for r in offers(framework).every_run(framework, "cpu")
             if r.replicas == "2" and (r.mode, r.api, r.engine) == ("eager", "loop", "")]  # the plain loop's
    one_node = Path(request.config.getoption("results")) / f"{run.name}.json"
    assert one_node.is_file(), f"no results for {run.describe()}: run `python -m conformance run --framework " \
                               f"{framework} --every-run` first"
    two_nodes = tmp_path / "two-nodes.json"
    assert main(["run", "--framework", framework, "--replicas", "2", "--nodes", "2", "--case", CASE,
                 "--out", str(two_nodes)]) == 0
    verdicts = lambda path: {c.id: (c.verdict, c.reason) for c in results.read(path).cases if c.base_id == CASE}
    got = verdicts(two_nodes)
    assert got and got == verdicts(one_node)
    assert all(verdict != "error" for verdict, _ in got.values())
