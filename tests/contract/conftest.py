"""`pytest tests/contract --framework F`: read the results files that `python -m conformance run
--framework F --every-run` just wrote (in --results, default reports/results), one per run the room
offers for the installed version."""


def pytest_addoption(parser):
    parser.addoption("--framework", help="the room whose runs to check (its framework must be installed)")
    parser.addoption("--results", default="reports/results", help="folder of results files")
    parser.addoption("--device", default="cpu", help="the device the runs used")
    parser.addoption("--replicas", help="only the runs of this replica count (tools/device-run: 1, its one GPU "
                                        "runs no data-parallel run); default: every run")
