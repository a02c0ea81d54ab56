"""Run axes: api (loop / trainer) and graph backend, without a framework.

The trainer here is the oracle's own loop driven through `train_step`: what the engine does with a
framework's trainer (which steps it can run, which checks it cannot observe) is tested on it."""
import pytest

from conformance import results, schema
from conformance.execute import refusal, run_instance
from conformance.reference import ReferenceRunner
from conformance.runners.base import Unavailable
from conformance.scenario import observe, trainer_refusal
from conformance.schema import KnownVariant, SPEC_DIR, load_spec
from conformance.verdict import probes

SPEC = load_spec(SPEC_DIR)


class OracleTrainer(ReferenceRunner):
    """A trainer that is the reference loop in one call: clear, forward + backward, update."""
    apis = ("loop", "trainer")
    backends = ("fast", "slow")
    modes = ("eager", "graph")
    steps = 0

    def train_step(self, path, x, target, train):
        self.steps += 1
        self.clear_grads("default")
        loss = self.forward(path, x, target, train=train, backward=True)
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
    (dict(api="trainer"), "offers --api loop, not trainer"),
    (dict(mode="graph"), "offers --mode eager, not graph"),
    (dict(backend="inductor"), "offers no --backend, not inductor with --mode eager"),
])
def test_unoffered_axes_are_refused_with_one_line(kwargs, needle):
    with pytest.raises(Unavailable, match=needle):
        ReferenceRunner(**kwargs)


def test_backend_defaults_to_the_first_and_only_in_graph_mode():
    assert OracleTrainer(mode="graph").backend == "fast"
    assert OracleTrainer(mode="graph", backend="slow").backend == "slow"
    assert OracleTrainer().backend == ""
    with pytest.raises(Unavailable, match="--backend fast/slow with --mode graph, not slow with --mode eager"):
        OracleTrainer(backend="slow")
    with pytest.raises(Unavailable, match="not turbo"):
        OracleTrainer(mode="graph", backend="turbo")


def test_run_names_carry_the_backend():
    assert results.run_name("torch", "2.13.0", "cpu", "graph", "loop", "aot_eager") == "torch-2.13.0-cpu-graph+aot_eager-loop"
    assert results.run_name("paddle", "3.3.1", "cpu", "eager", "trainer") == "paddle-3.3.1-cpu-eager-trainer"
    assert results.run_name("x", "1", "cpu", "graph", "loop", "a/b c") == "x-1-cpu-graph+a_b_c-loop"


def test_variant_scope_limits_it_to_its_modes_and_apis():
    def known(name, **scope):
        return KnownVariant(variant=name, reason="why", link=None, snippet="conformance/runners/fw/confirm/s.py", **scope)
    everywhere, graph, trainer = (known("adam-epsilon-hat"), known("bn-running-var-biased", modes=["graph"]),
                                  known("frozen-still-trained", apis=["trainer"]))
    names = lambda *axes: [v.variant for v in schema.profile([everywhere, graph, trainer], "1.0", *axes)]
    assert names("eager", "loop") == ["adam-epsilon-hat"]
    assert names("graph", "loop") == ["adam-epsilon-hat", "bn-running-var-biased"]
    assert names("eager", "trainer") == ["adam-epsilon-hat", "frozen-still-trained"]
    with pytest.raises(ValueError):
        known("adam-epsilon-hat", modes=["jit"])
    static = known("bn-stats-in-parameters", backends=["to_static"])
    assert schema.profile([static], "1.0", "graph", "loop", "to_static") == [static]
    assert schema.profile([static], "1.0", "graph", "loop", "static") == []
    assert schema.profile([static], "1.0", "eager", "loop", "") == [static]
