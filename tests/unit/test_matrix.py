"""`python -m conformance matrix` (conformance/matrix.py) and the GitHub Actions workflow that runs its runs
(.github/workflows/matrix.yml), without any framework."""
import json
import shlex
from pathlib import Path

import pytest
import yaml

from conformance.__main__ import main
from conformance.matrix import RUNS_ON, runs
from conformance.run import AXES
from conformance.runners import ROOMS, offers
from conformance.runners.manifest import load_rooms

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "matrix.yml"


def test_every_offered_run_of_every_main_job_env_is_one_cpu_job():
    found = runs()
    expected = [(env.name, run) for framework, manifest in load_rooms().items() for env in manifest.envs
                if not env.outside_labels for run in offers(framework).every_run(framework)]
    assert len(found) == len(expected) and len({r["id"] for r in found}) == len(found)
    assert {(r["env"], r["mode"], r["api"], r["backend"], r["replicas"]) for r in found} == {
        (env, run.mode, run.api, run.backend, run.replicas) for env, run in expected}
    assert {r["runs_on"] for r in found} == {"ubuntu-latest"} and {r["framework"] for r in found} == set(ROOMS)


def test_each_command_asks_for_exactly_its_runs_axes():
    options = {a.name for a in AXES if a.option}
    for run in runs(("cpu", "cuda")):
        argv = shlex.split(run["command"])
        assert argv[:6] == ["python", "-m", "conformance", "run", "--framework", run["framework"]]
        given = dict(arg[2:].split("=", 1) for arg in argv[6:])
        assert set(given) <= options and given["device"] == run["device"]
        for axis in AXES:
            if axis.option and axis.name != "device":
                assert given.get(axis.name, axis.default or "") == run[axis.name], (run["id"], axis.name)
        assert shlex.split(run["install"])[:6] == ["python", "-m", "pip", "install", "-e", "."]
        assert shlex.split(run["install"])[6:] == run["pins"]


def test_gpu_and_ascend_runs_go_to_labelled_self_hosted_runners():
    found = runs(("cuda", "ascend"), all_envs=True)
    assert {r["device"] for r in found} == {"cuda", "ascend"}
    assert all(r["runs_on"] == RUNS_ON[r["device"]] and r["runs_on"][0] == "self-hosted" for r in found)
    assert {r["framework"] for r in found if r["device"] == "ascend"} == {
        f for f in ROOMS if "ascend" in offers(f).devices}
    assert "torch211" in {r["env"] for r in found} and "torch211" not in {r["env"] for r in runs(("cuda",))}


def test_the_command_line_writes_json_and_refuses_an_unknown_env_in_one_line(capsys):
    assert main(["matrix", "--json", "--env", "jax"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["env"] for r in out} == {"jax"} and out[0]["python"] == "3.12"
    assert main(["matrix", "--env", "jaxx"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--env jaxx: no room.yaml names it" in err[0]


@pytest.fixture(scope="module")
def workflow():
    return yaml.safe_load(WORKFLOW.read_text())


def test_the_workflow_plans_from_the_matrix_command_and_runs_one_job_per_run(workflow):
    jobs = workflow["jobs"]
    assert list(jobs) == ["plan", "run", "collect"]
    plan = " ".join(step.get("run", "") for step in jobs["plan"]["steps"])
    assert "python -m conformance matrix --json" in plan and "GITHUB_OUTPUT" in plan
    run = jobs["run"]
    assert run["needs"] == "plan" and run["strategy"]["fail-fast"] is False
    assert run["strategy"]["matrix"]["include"] == "${{ fromJSON(needs.plan.outputs.runs) }}"
    assert run["runs-on"] == "${{ matrix.runs_on }}"
    commands = [step.get("run") for step in run["steps"]]
    assert commands.index("${{ matrix.install }}") < commands.index("${{ matrix.command }}")
    upload = next(step for step in run["steps"] if step.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()" and upload["with"]["path"] == "reports/results/*.json"
    assert "${{ matrix.id }}" in upload["with"]["name"]


def test_the_collect_job_always_builds_the_report_and_the_site_from_every_results_file(workflow):
    collect = workflow["jobs"]["collect"]
    assert collect["needs"] == "run" and collect["if"] == "always()"
    download = next(step for step in collect["steps"] if step.get("uses", "").startswith("actions/download-artifact"))
    assert download["with"]["path"] == "reports/results" and download["with"]["merge-multiple"] is True
    commands = [step.get("run", "") for step in collect["steps"]]
    assert "python -m conformance report" in commands
    assert "python -m conformance publish --history reports/site" in commands
