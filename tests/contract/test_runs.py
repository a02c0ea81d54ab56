"""Each run of a room holds the room's contract (conformance/engine/contract.py): every outcome is
conform or documented, or is listed with why in the room's expected.yaml, and every entry still holds.

Run in the room's tox env after its runs (`tox -e <framework>-tests`): it reads the results files,
it does not run the spec again."""
from pathlib import Path

import pytest

from conformance import results
from conformance.engine.contract import check_run
from conformance.expected import load_expected
from conformance.runners import adapter_path, load_adapter, offers
from conformance.spec import load_spec


def pytest_generate_tests(metafunc):
    if "run" not in metafunc.fixturenames:
        return
    framework = metafunc.config.getoption("framework")
    if not framework:
        metafunc.parametrize("run", [pytest.param(None, marks=pytest.mark.skip(
            reason="pass --framework F to check the runs of room F"))])
        return
    version = load_adapter(adapter_path(framework), framework).version()
    device = metafunc.config.getoption("device")
    replicas = metafunc.config.getoption("replicas")
    runs = [run.replace(version=version) for run in offers(framework).every_run(framework, device)
            if replicas in (None, run.replicas)]
    metafunc.parametrize("run", runs, ids=[run.name for run in runs])


def test_run_holds_the_contract(run, request):
    folder = Path(request.config.getoption("results"))
    path = folder / f"{run.name}.json"
    assert path.is_file(), (f"no results for {run.describe()} in {folder}: run "
                            f"`python -m conformance run --framework {run.framework} --every-run` first")
    doc = results.read(path)
    spec = load_spec()
    problems = check_run(doc, load_expected(run.framework), [i.id for i in offers(run.framework).instances(run, spec)],
                         [i.id for i in spec])
    assert not problems, f"{path}:\n" + "\n".join(problems)
