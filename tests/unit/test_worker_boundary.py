"""The worker boundary: whatever an adapter sends back or leaves running costs only its own case.

The test-only adapters in faults/hostile_adapter.py send malformed observations, objects the parent
cannot unpickle, fork children that hold the pipe, or hang while the oracle runs long; the specs in
faults/boundary and faults/oracle put a healthy case beside each.
"""
import os
import pickle
import random
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import conformance.engine.judge
import conformance.engine.worker
from conformance import results
from conformance.__main__ import main
from conformance.engine.judge import TimeLimit, time_limit
from conformance.engine.worker import Worker, run_isolated
from conformance.run import Run
from conformance.spec import Case, Instance

FAULTS = Path(__file__).parent / "faults"
HOSTILE = "hostile_adapter:HostileRunner"
EXPECTED = {
    "lacks-grad": "bad observation: step 0 grads lacks 'lacks-grad.weight'",
    "lacks-value": "bad observation: initial values lacks 'lacks-value.bias'",
    "lacks-trainable": "bad observation: trainable lacks 'lacks-trainable.bias'",
    "values-list": "bad observation: initial values is list, not a dict",
    "object-array": "bad observation: initial values 'object-array.weight' has dtype object, not real numbers",
    "string-array": "bad observation: step 0 grads 'string-array.weight' has dtype <U1, not real numbers",
    "complex": "bad observation: initial values 'complex.weight' has dtype complex128, not real numbers",
    "string-loss": "bad observation: step 0 loss is str, not a real number",
    "no-opt-params": "bad observation: optimizer_params is NoneType, not a list of str",
    "unpicklable": "bad observation: cannot unpickle it: UnpicklingError: hostile_adapter._refuse_outside "
                   "may not cross from the worker",
    "bad-pickle": "bad observation: cannot unpickle it: TypeError: data type 'no-such-dtype' not understood",
    "fork-segv": "crashed: SIGSEGV",
}


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie left for a non-reaping init counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in "ZX"


def ended(pid: int) -> bool:
    """Whether `pid` ends within a grace period; SIGKILL is delivered asynchronously."""
    for _ in range(200):
        if not running(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def hostile(monkeypatch, tmp_path):
    """The hostile adapter importable in the (spawned) worker; the pids of the children it forks."""
    monkeypatch.syspath_prepend(str(FAULTS))
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("HOSTILE_PIDS", str(pids))
    children = {}
    yield children
    for name, pid in children.items():  # only if the code under test left one behind
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def child_pid(children, layer):
    pid = int(Path(os.environ["HOSTILE_PIDS"], f"{layer}.pid").read_text())
    children[layer] = pid
    return pid


def run_cli(spec, out, *argv):
    return main(["--spec", str(FAULTS / spec), "run", "--framework", "reference", "--adapter", HOSTILE,
                 "--out", str(out), *argv])


class Workers:
    """Workers for a run_isolated call made here, counted and all closed afterwards."""

    def __init__(self, adapter=HOSTILE):
        self.adapter, self.all = adapter, []

    def new(self):
        self.all.append(Worker(Run("reference"), self.adapter))
        return self.all[-1]

    def close(self):
        for worker in self.all:
            worker.close()


def instance(case_id, layer, steps=1):
    case = Case.model_validate(dict(id=case_id, title=case_id, references=["https://example.org/faults"],
                                    model={"layers": {layer: {"linear": [2, 2]}}}, optimizer={"name": "sgd"},
                                    steps=[{"path": [layer], "repeat": steps}],
                                    expect=[{"step": 0, "value": {f"{layer}.weight": "reference"}}]))
    return Instance(id=case_id, case=case, topic="gradient_flow", axes={}, source="test")


# ---------------------------------------------------------------- 1: malformed observations
def test_malformed_observations_are_that_cases_error_and_nothing_is_lost(hostile, tmp_path):
    out = tmp_path / "boundary.json"
    assert run_cli("boundary", out) == 0
    child_pid(hostile, "fork-lingers")
    child_pid(hostile, "fork-segv")
    doc = results.read(out)
    by_id = {c.id: c for c in doc.cases}
    assert doc.complete and len(doc.cases) == 27
    for case_id, reason in EXPECTED.items():
        assert (by_id[case_id].verdict, by_id[case_id].reason) == ("error", reason), case_id
    assert by_id["fork-lingers"].verdict == "conform"
    healthy = [c for c in doc.cases if c.id.startswith("healthy-")]
    assert len(healthy) == 14 and all(c.verdict == "conform" and c.checks for c in healthy)


def test_unpickling_failure_replaces_the_worker(hostile):
    workers = Workers()
    records = []
    try:
        workers.new().start()
        run_isolated(workers.all[0], workers.new, [instance("unpicklable", "unpicklable"), instance("h1", "a"),
                                                   instance("bad-pickle", "bad-pickle"), instance("h2", "a")],
                     [], None, records.append)
    finally:
        workers.close()
    assert [r.verdict for r in records] == ["error", "conform", "error", "conform"]
    assert len(workers.all) == 3  # the pipe after a failed unpickling is not reused


def test_a_malformed_ready_message_stops_the_run_cleanly(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(FAULTS))
    code = main(["--spec", str(FAULTS / "boundary"), "run", "--framework", "reference",
                 "--adapter", "hostile_adapter:BadVersionRunner", "--out", str(tmp_path / "v.json")])
    err = capsys.readouterr().err
    assert code == 4 and err == "error: the worker's ready message is not four strings and a dict (is version() a str?)\n"


def test_the_accelerator_an_adapter_names_is_recorded_with_the_run(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(FAULTS))
    out = tmp_path / "gpu.json"
    assert main(["--spec", str(FAULTS / "boundary"), "run", "--framework", "reference", "--case", "healthy-0",
                 "--adapter", "hostile_adapter:GpuRunner", "--out", str(out)]) == 0
    assert results.read(out).environment.accelerator == "Test GPU (compute capability 9.0), driver 1.2.3, CUDA 13.0"


def test_the_packages_an_adapter_names_are_recorded_and_bad_ones_stop_the_run(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(FAULTS))
    out = tmp_path / "packages.json"
    assert main(["--spec", str(FAULTS / "boundary"), "run", "--framework", "reference", "--case", "healthy-0",
                 "--adapter", "hostile_adapter:PackagesRunner", "--out", str(out)]) == 0
    assert results.read(out).environment.packages == {"flax": "0.12.12", "optax": "0.2.8"}
    code = main(["--spec", str(FAULTS / "boundary"), "run", "--framework", "reference",
                 "--adapter", "hostile_adapter:BadPackagesRunner", "--out", str(tmp_path / "p.json")])
    err = capsys.readouterr().err
    assert code == 4 and "the adapter's packages are not at most 8 names and versions" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "p.json").exists()


def test_an_accelerator_of_two_lines_stops_the_run_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(FAULTS))
    code = main(["--spec", str(FAULTS / "boundary"), "run", "--framework", "reference",
                 "--adapter", "hostile_adapter:BadAcceleratorRunner", "--out", str(tmp_path / "a.json")])
    err = capsys.readouterr().err
    assert code == 4 and "the adapter's accelerator is not one printable line" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "a.json").exists()


def test_an_unexpected_error_still_writes_the_finished_cases(hostile, monkeypatch, tmp_path):
    judge = conformance.engine.worker.judge

    def judge_fails_on_the_third(inst, *args):
        if inst.id == "healthy-2":
            raise RuntimeError("a suite bug")
        return judge(inst, *args)

    monkeypatch.setattr(conformance.engine.worker, "judge", judge_fails_on_the_third)
    out = tmp_path / "bug.json"
    with pytest.raises(RuntimeError):
        run_cli("boundary", out, "--case", "healthy-0", "--case", "healthy-1", "--case", "healthy-2")
    doc = results.read(out)
    assert not doc.complete and [c.id for c in doc.cases] == ["healthy-0", "healthy-1"]


# ---------------------------------------------------------------- 2: children the worker forks
def test_a_crash_is_reported_as_such_while_a_forked_child_holds_the_pipe(hostile, tmp_path):
    out = tmp_path / "segv.json"
    assert run_cli("boundary", out, "--case", "fork-segv", "--case", "healthy-12") == 0
    child = child_pid(hostile, "fork-segv")
    by_id = {c.id: c for c in results.read(out).cases}
    assert by_id["fork-segv"].reason == "crashed: SIGSEGV"  # not "timed out after 5 s"
    assert by_id["healthy-12"].verdict == "conform"
    assert ended(child)


def test_children_a_worker_forked_end_with_it(hostile, tmp_path):
    out = tmp_path / "lingers.json"
    assert run_cli("boundary", out, "--case", "fork-lingers", "--case", "healthy-13") == 0
    child = child_pid(hostile, "fork-lingers")
    assert {c.verdict for c in results.read(out).cases} == {"conform"}
    assert ended(child)


# ---------------------------------------------------------------- 3: the oracle's time limit
def test_the_oracle_is_bounded_by_the_case_limit(hostile, tmp_path):
    out = tmp_path / "oracle.json"
    assert run_cli("oracle", out, "--timeout", "0.5") == 0
    by_id = {c.id: c for c in results.read(out).cases}
    assert (by_id["slow-oracle"].verdict, by_id["slow-oracle"].reason) == (
        "error", "reference oracle timed out after 0.5 s")
    assert by_id["healthy"].verdict == "conform"


def test_time_limit_interrupts_the_block_and_restores_what_was_there():
    def mine(signum, frame):
        raise AssertionError("the outer handler ran inside the limited block")

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1000)  # an outer timer, suspended meanwhile
        with pytest.raises(TimeLimit):
            with time_limit(0.05):
                try:
                    time.sleep(60)
                except Exception:  # a broad handler in the block cannot swallow the limit
                    pass
        assert signal.getsignal(signal.SIGALRM) is mine
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 1000
        with time_limit(60):
            pass  # a block within its limit runs as usual
        with time_limit(float("inf")):  # a spec may say `timeout: .inf`
            pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- fuzzing the boundary
# slot of the observation -> how to break it there (see hostile_adapter.mangle)
SLOTS = {"reply": ["replace"], "observation": ["replace"], "trainable": ["replace"], "trainable[]": ["replace", "delete", "add"],
         "optimizer_params": ["replace"], "optimizer_params[]": ["replace", "add"],
         "initial": ["replace"], "initial[]": ["replace", "delete", "add"],
         "steps": ["replace"], "steps[]": ["replace", "delete", "add"], "loss": ["replace"],
         "grads": ["replace"], "grads[]": ["replace", "delete", "add"],
         "values": ["replace"], "values[]": ["replace", "delete", "add"]}
# Values wrong in every slot: none is a bool, str, real number, None, list of str, name-keyed dict
# or real array of a parameter's shape (2, 2) or (2,).
GARBAGE = st.one_of(
    st.complex_numbers(),
    st.builds(np.complex64, st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e6)),
    st.binary(max_size=4),
    st.tuples(st.integers()),
    st.frozensets(st.integers(), max_size=2),
    st.lists(st.one_of(st.none(), st.integers(), st.floats()), min_size=1, max_size=3),
    st.dictionaries(st.integers(), st.floats(), max_size=2),
    st.builds(lambda xs: np.array(xs, dtype=object), st.lists(st.floats(), min_size=1, max_size=3)),
    hnp.arrays(st.sampled_from([np.complex128, np.bool_, np.dtype("<U3")]),
                       hnp.array_shapes(min_dims=0, max_dims=2, max_side=2)),
    hnp.arrays(np.float64, st.sampled_from([(), (5,), (1, 5)])),
    st.just("<poison>"),  # an object the parent cannot unpickle
)
MUTATION = st.tuples(st.sampled_from([(slot, action) for slot, actions in SLOTS.items() for action in actions]),
                     st.integers(0, 7), GARBAGE).map(lambda m: (*m[0], m[1], m[2]))


def test_fuzz_no_malformed_observation_crashes_the_parent_or_costs_another_case(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(FAULTS))
    mutations_file = tmp_path / "mutations.pickle"
    monkeypatch.setenv("HOSTILE_MUTATIONS", str(mutations_file))  # read by the worker, case by case
    workers = Workers("hostile_adapter:FuzzRunner")
    current = [workers.new()]
    current[0].start()

    @settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(MUTATION, min_size=1, max_size=3))
    def check(mutations):
        mutations_file.write_bytes(pickle.dumps(mutations))
        instances = [instance("healthy-0", "a", steps=2)]
        for k in range(len(mutations)):
            instances += [instance(f"m{k}", f"m{k}", steps=2), instance(f"healthy-{k + 1}", "a", steps=2)]
        records = []
        current[0] = run_isolated(current[0], workers.new, instances, [], 10, records.append)
        assert [r.id for r in records] == [i.id for i in instances]
        for record in records:
            if record.id.startswith("healthy-"):
                assert record.verdict == "conform", record.reason
            else:
                assert record.verdict == "error" and record.reason.startswith("bad observation: "), record.reason
                assert "\n" not in record.reason

    try:
        check()
    finally:
        workers.close()


# ---------------------------------------------------------------- SIGKILL at random moments
def test_worker_killed_at_random_moments_every_case_still_gets_a_record(hostile):
    kills_wanted, rng = 20, random.Random(20260519)
    workers = Workers()
    workers.new().start()
    records, kills, sent, stop = [], [], [], threading.Event()

    def killer():
        # a different worker each time, and only after a case finished since the last kill, so a
        # replacement is killed while starting at most once in a row
        victim, seen = None, 0
        while len(kills) < kills_wanted and not stop.is_set():
            time.sleep(rng.uniform(0, 0.25))
            target = workers.all[-1]
            if target is victim or len(records) == seen:
                continue
            target.process.kill()
            victim, seen = target, len(records)
            kills.append(seen)

    def instances():  # cases keep coming until the killer is done, then a few more
        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        while thread.is_alive() and len(sent) < 5000:
            sent.append(instance(f"nap-{len(sent)}", "nap"))
            yield sent[-1]
        for _ in range(3):
            sent.append(instance(f"nap-{len(sent)}", "nap"))
            yield sent[-1]

    try:
        run_isolated(workers.all[0], workers.new, instances(), [], 10, records.append)
    finally:
        stop.set()
        workers.close()
    assert len(kills) == kills_wanted
    assert [r.id for r in records] == [i.id for i in sent]
    assert {(r.verdict, r.reason) for r in records} <= {("conform", None), ("error", "crashed: SIGKILL")}
