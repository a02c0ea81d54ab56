"""Run axes (conformance/run.py), a room's offers, api (loop / trainer) and graph backend, without a framework.

The trainer here is the oracle's own loop driven through `train_step`: what the engine does with a
framework's trainer (which steps it can run, which checks it cannot observe) is tested on it."""
import pytest

from conformance.engine.judge import refusal, run_instance
from conformance.engine.scenario import observe, trainer_refusal
from conformance.engine.verdict import probes
from conformance.oracle.known import KnownVariant, profile
from conformance.oracle.reference import ReferenceRunner
from conformance.run import AXES, Run
from conformance.runners import ROOMS, offers
from conformance.runners.base import Offers, Unavailable
from conformance.spec import SPEC_DIR, load_spec

SPEC = load_spec(SPEC_DIR)


class OracleTrainer(ReferenceRunner):
    """A trainer that is the reference loop in one call: clear, forward + backward, update."""
    offers = Offers(devices=("cpu",), runs=({}, {"mode": "graph", "backend": "fast"}, {"mode": "graph", "backend": "slow"},
                                            {"api": "trainer"}))
    steps = 0

    def train_step(self, path, x, target, train, loss=None):
        self.steps += 1
        self.clear_grads("default")
        loss = self.forward(path, x, target, train=train, backward=True, loss=loss)
        self.update()
        return loss


def test_trainer_runs_what_it_can_observe_and_says_why_not_for_the_rest():
    records = {i.id: run_instance(OracleTrainer(api="trainer"), i, []) for i in SPEC}
    unsupported = {i: r for i, r in records.items() if r.verdict == "unsupported"}
    bad = {i: (r.verdict, r.reason) for i, r in records.items() if r.verdict not in ("conform", "unsupported")}
    assert records and not bad
    assert 0 < len(unsupported) < len(records)  # some run, some cannot
    for inst in SPEC:
        kinds = {kind for *_, kind, _ in probes(inst)}
        assert (inst.id in unsupported) == (kinds == {"grad"} or trainer_refusal(inst.case) is not None), inst.id
        if inst.id in unsupported:
            assert "\n" not in unsupported[inst.id].reason
        else:  # what it cannot observe is listed, never counted as held
            grads = [c for c in records[inst.id].checks if c.check.startswith("grad ")]
            assert not grads and bool(records[inst.id].unobserved) == ("grad" in kinds)
    seed1 = records["seed-1-decay-moves-unused-layer[adamw]"]
    assert seed1.verdict == "conform" and seed1.unobserved == ["grad first.weight @ step 1"]


def test_trainer_reasons_name_the_gradient_or_the_step():
    by_id = {i.id: i for i in SPEC}
    grad_case = by_id["seed-5-unused-bn-grad"]
    assert refusal(grad_case, "trainer") == "checks only gradients: a framework's trainer does not expose them"
    assert refusal(grad_case, "loop") is None
    case = by_id["seed-2-plain-list-sublayers"].case
    step = case.steps[0]
    accumulate = case.model_copy(update={"steps": [step, step.model_copy(update={"clear": False})]})
    assert trainer_refusal(accumulate) == ("step 2 back-propagates and updates alone: a trainer step clears, "
                                           "back-propagates and updates together")
    grad_only = case.model_copy(update={"steps": [step.model_copy(update={"update": False, "repeat": 1})]})
    assert trainer_refusal(grad_only).startswith("step 0 clears and back-propagates alone")
    assert trainer_refusal(case.model_copy(update={"clear": "zeros"})) == (
        "clears gradients to zeros explicitly: a trainer clears them its own way")
    assert trainer_refusal(case) is None


def test_trainer_observation_has_no_gradients_and_uses_train_step():
    inst = next(i for i in SPEC if i.id == "seed-2-plain-list-sublayers")
    runner = OracleTrainer(api="trainer")
    obs = observe(runner, inst.case)
    assert runner.steps == 2 and all(g is None for s in obs.steps for g in s.grads.values())


@pytest.mark.parametrize("kwargs, needle", [
    (dict(api="trainer"), "offers the runs eager loop, eager loop, 2 replicas; not eager trainer"),
    (dict(mode="graph"), "offers the runs eager loop, eager loop, 2 replicas; not graph loop"),
    (dict(backend="inductor"), "offers the runs eager loop, eager loop, 2 replicas; not eager (inductor) loop"),
    (dict(device="cuda"), "offers --device cpu, not cuda"),
])
def test_unoffered_runs_are_refused_with_one_line(kwargs, needle):
    with pytest.raises(Unavailable, match=needle.replace("(", r"\(").replace(")", r"\)")):
        ReferenceRunner(**kwargs)


def test_a_refusal_reason_names_why():
    class NoTrainer(ReferenceRunner):
        offers = Offers(devices=("cpu",), runs=({},), refused={"api=trainer": "there is no trainer here"})
    with pytest.raises(Unavailable, match="^there is no trainer here$"):
        NoTrainer(api="trainer")
    with pytest.raises(TypeError, match="unknown run axis 'color'"):
        NoTrainer(color="red")


def test_backend_defaults_to_the_first_and_only_in_graph_mode():
    assert OracleTrainer(mode="graph").backend == "fast"
    assert OracleTrainer(mode="graph", backend="slow").backend == "slow"
    assert OracleTrainer().backend == ""
    with pytest.raises(Unavailable, match="not eager \\(slow\\) loop"):
        OracleTrainer(backend="slow")
    with pytest.raises(Unavailable, match="not graph \\(turbo\\) loop"):
        OracleTrainer(mode="graph", backend="turbo")


def test_every_run_is_the_offered_list_on_a_device():
    runs = OracleTrainer.offers.every_run("x", "cpu")
    assert [r.execution for r in runs] == ["eager loop", "graph (fast) loop", "graph (slow) loop", "eager trainer"]
    assert all(OracleTrainer(run).run == run for run in runs)


def test_every_room_offers_runs_of_known_axis_values():
    for framework in ROOMS:
        room = offers(framework)
        assert room.runs and room.devices, framework
        for axes in room.runs:
            assert set(axes) <= {a.name for a in AXES if a.option}, framework
            for name, value in axes.items():
                allowed = next(a.values for a in AXES if a.name == name)
                assert allowed is None or value in allowed, (framework, name, value)
            assert ("backend" in axes) == (axes.get("mode") == "graph"), "a graph run names its backend"


def test_run_names_carry_the_backend():
    assert Run("torch", "2.13.0", "cpu", "graph", "loop", "aot_eager").name == "torch-2.13.0-cpu-graph+aot_eager-loop"
    assert Run("paddle", "3.3.1", "cpu", "eager", "trainer").name == "paddle-3.3.1-cpu-eager-trainer"
    assert Run("x", "1", "cpu", "graph", "loop", "a/b c").name == "x-1-cpu-graph+a_b_c-loop"
    assert Run("x", "1", "cuda", "graph", "trainer", "jit").label == "cuda graph (jit) trainer"
    assert Run("x", "1").label == ""


def test_variant_scope_limits_it_to_its_runs():
    def known(name, **scope):
        return KnownVariant(variant=name, reason="why", link=None, **scope)
    everywhere, graph, trainer = (known("adam-epsilon-hat"), known("bn-running-var-biased", modes=["graph"]),
                                  known("frozen-still-trained", apis=["trainer"]))
    names = lambda **axes: [v.variant for v in profile([everywhere, graph, trainer], Run("fw", "1.0", **axes))]
    assert names() == ["adam-epsilon-hat"]
    assert names(mode="graph") == ["adam-epsilon-hat", "bn-running-var-biased"]
    assert names(api="trainer") == ["adam-epsilon-hat", "frozen-still-trained"]
    with pytest.raises(ValueError, match="'jit' is not a mode"):
        known("adam-epsilon-hat", modes=["jit"])
    with pytest.raises(ValueError, match="'tpu' is not a device"):
        known("adam-epsilon-hat", devices=["tpu"])
    static = known("bn-stats-in-parameters", backends=["to_static"])
    assert profile([static], Run("fw", "1.0", mode="graph", backend="to_static")) == [static]
    assert profile([static], Run("fw", "1.0", mode="graph", backend="static")) == []
    assert profile([static], Run("fw", "1.0")) == [static]  # the backend bounds graph runs only
    cuda = known("adam-epsilon-hat", devices=["cuda"], versions=">=2")
    assert profile([cuda], Run("fw", "2.1", device="cuda")) == [cuda]
    assert profile([cuda], Run("fw", "2.1")) == [] and profile([cuda], Run("fw", "1.9", device="cuda")) == []
    assert profile([cuda], Run("fw", "9" * 5000, device="cuda")) == []  # unparseable: outside every range


def test_a_results_file_keeps_every_axis_of_its_run():
    """Each axis of AXES survives the results file's environment and a variant record keeps its scope by it."""
    from conformance import results
    from conformance.oracle.known import KnownVariant
    from conformance.spec import SPEC_DIR
    run = Run("torch", version="9.9", device="cuda", mode="graph", api="trainer", backend="inductor", replicas="2")
    assert {a.name for a in AXES} == set(vars(run))
    env = results.environment(run, SPEC_DIR, "now")
    assert results.Environment.model_validate_json(env.model_dump_json()).run == run
    known = KnownVariant(variant="replica-grads-averaged", reason="r", link=None,
                         **{a.scope: ["2"] if a.name == "replicas" else [] for a in AXES if a.scope and a.values})
    record = results.VariantRecord.of(known)
    assert {a.scope for a in AXES if a.scope and a.values} <= set(record.model_dump())
    assert record.replicas == ["2"]


def test_every_run_runs_each_offered_run_with_all_its_axes(tmp_path, monkeypatch):
    """--every-run hands each run every axis it has: the oracle's data-parallel run is a run of 2 replicas, with
    the data-parallel cases only, in its own file."""
    from conformance import results
    from conformance.__main__ import main
    monkeypatch.chdir(tmp_path)
    assert main(["--spec", str(SPEC_DIR), "run", "--framework", "reference", "--every-run", "-k", "dp-equal"]) == 0
    files = sorted((tmp_path / "reports" / "results").glob("*.json"))
    assert [f.name.endswith("+dp2.json") for f in files] == [True]  # the single-process run: nothing asked for
    dp = results.read(files[0])
    assert dp.environment.run.replicas == "2" and {c.base_id for c in dp.cases} == {"dp-equal-shares-mean"}


def test_rooms_offer_sharded_engines_where_they_run_and_refuse_the_others_with_why():
    torch_offers, paddle_offers = offers("torch"), offers("paddle")
    for engine in ("fsdp1", "fsdp2"):
        assert torch_offers.resolve(Run("torch", replicas="2", engine=engine)).engine == engine
    with pytest.raises(Unavailable, match="group_sharded_parallel asserts a GPU"):
        paddle_offers.resolve(Run("paddle", replicas="2", engine="group_sharded"))
    with pytest.raises(Unavailable, match="not eager loop, 2 replicas \\(fsdp1\\)"):
        paddle_offers.resolve(Run("paddle", replicas="2", engine="fsdp1"))
