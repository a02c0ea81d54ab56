"""The data-parallel vocabulary and its oracle: data-parallel training is one device on the global batch with the
mean loss; the replica-grads-* variants combine the replicas' own gradients otherwise."""
import numpy as np
import pytest

from conformance.oracle import reference as ref
from conformance.spec import Model, SpecError, load_spec

LAYERS = {"a": {"linear": [3, 4]}, "b": {"linear": [4, 2]}, "c": {"linear": [4, 2]}}


def grads_after(shards, variants=(), batch=8):
    model = Model.model_validate({"layers": LAYERS})
    rng = np.random.default_rng(0)
    values = {n: rng.normal(size=s) for n, s in [("a.weight", (3, 4)), ("a.bias", (4,)), ("b.weight", (4, 2)),
                                                  ("b.bias", (2,)), ("c.weight", (4, 2)), ("c.bias", (2,))]}
    runner = ref.ReferenceRunner(variants=variants)
    runner.build(model, values)
    runner.make_optimizer(ref.Optimizer(name="sgd"))
    x, t = rng.normal(size=(batch, 3)), rng.normal(size=(batch, 2))
    loss = runner.forward_replicas(shards, x, t, True, True)
    return loss, runner.grads(), (runner, x, t)


def test_replicas_on_one_path_are_one_device_on_the_global_batch():
    loss, grads, (runner, x, t) = grads_after([(["a", "b"], range(0, 4)), (["a", "b"], range(4, 8))])
    single, _, _ = grads_after([(["a", "b"], range(0, 8))])
    assert np.isclose(loss, single)
    summed_loss, summed, _ = grads_after([(["a", "b"], range(0, 4)), (["a", "b"], range(4, 8))], ["replica-grads-summed"])
    assert np.isclose(summed_loss, loss) and np.allclose(summed["a.weight"], 2 * grads["a.weight"])
    averaged = grads_after([(["a", "b"], range(0, 4)), (["a", "b"], range(4, 8))], ["replica-grads-averaged"])[1]
    assert np.allclose(averaged["a.weight"], grads["a.weight"])  # equal shares: the average is the global mean


def test_unequal_shares_weigh_each_sample_the_same_unless_averaged_per_replica():
    shards = [(["a", "b"], range(0, 6)), (["a", "b"], range(6, 8))]
    reference = grads_after(shards)[1]
    averaged = grads_after(shards, ["replica-grads-averaged"])[1]
    assert np.allclose(reference["a.weight"], grads_after([(["a", "b"], range(0, 8))])[1]["a.weight"])
    assert not np.allclose(averaged["a.weight"], reference["a.weight"])


def test_a_layer_one_replica_uses_gets_its_share_of_the_global_gradient():
    """Replica 1 runs a -> c: c's gradient is the global mean loss's, that replica's rows weighing 4 of 8."""
    _, grads, (runner, x, t) = grads_after([(["a", "b"], range(0, 4)), (["a", "c"], range(4, 8))])
    alone = ref.ReferenceRunner()
    alone.build(Model.model_validate({"layers": LAYERS}), runner.values())
    alone.make_optimizer(ref.Optimizer(name="sgd"))
    alone.forward(["a", "c"], x[4:], t[4:], True, True)
    assert np.allclose(grads["c.weight"], 0.5 * alone.grads()["c.weight"]) and grads["b.weight"] is not None


CASE = """\
topic: gradient_flow
cases:
  - id: dp
    title: t
    references: [https://example.org/doc]
    data_parallel: {replicas: 2}
    model:
      layers:
        a: {linear: [2, 2]}
        bn: {batchnorm: 2}
        c: {linear: [2, 2]}
    optimizer: {name: sgd}
    steps:
      - {path: [a, c]}
    expect:
      - {step: 0, agree: [a.weight]}
"""


@pytest.mark.parametrize("edit, message", [
    (("{replicas: 2}", "{replicas: 2, shares: [3, 3]}"), "2 shares summing to the batch size 8"),
    (("    optimizer:", "    batch_size: 7\n    optimizer:"), "batch size 7 does not split equally among 2 replicas"),
    (("{replicas: 2}", "{replicas: 4}"), r"no run executes 4 replicas \(--replicas takes 2\)"),
    (("- {path: [a, c]}", "- {path: [a, c], replica_paths: {1: [a, zz]}}"), "steps.0.replica_paths: unknown layer 'zz'"),
    (("- {path: [a, c]}", "- {path: [a, c], replica_paths: {1: []}}"), "replica_paths.1: List should have at least 1"),
    (("- {path: [a, c]}", "- {path: [a, c], replica_paths: {2: [a]}}"), "replica 2 of 2"),
    (("- {path: [a, c]}", "- {path: [a, c], replica_paths: {1: [a, bn, c]}}"), "a BatchNorm on a path only some"),
    (("    data_parallel: {replicas: 2}\n", ""), "'replica_paths', 'agree', 'sync' and a 'synchronized' BatchNorm need"),
    (("bn: {batchnorm: 2}", "bn: {batchnorm: 2, synchronized: true}\n        bn2: {batchnorm: 2}"),
     "BatchNorm 'bn2' is not synchronized and 'bn' is"),
    (("a: {linear: [2, 2]}", "a: {linear: [2, 2], synchronized: true}"), "'synchronized' is a BatchNorm setting"),
    (("- {path: [a, c]}", "- {path: [a, c], sync: false}"), "'sync: false' is a backward that accumulates"),
    (("- {path: [a, c]}\n    expect:\n      - {step: 0, agree: [a.weight]}",
      "- {path: [a, c], sync: false, update: false}\n      - {path: [a, c], clear: false}\n    expect:\n"
      "      - {step: all, grad: {a.weight: reference}}"), "a 'sync: false' step's gradients are each replica's own"),
    (("- {path: [a, c]}", "- {path: [a, c], touch: [b]}"), "steps.0.touch: 'b' is no layer with parameters"),
])
def test_data_parallel_settings_are_checked(tmp_path, edit, message):
    (tmp_path / "dp.yaml").write_text(CASE.replace(*edit))
    with pytest.raises(SpecError, match=message):
        load_spec(tmp_path)
    (tmp_path / "dp.yaml").write_text(CASE)
    (instance,) = load_spec(tmp_path)
    assert [list(r) for r in instance.case.data_parallel.rows(8)] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_a_data_parallel_run_is_named_by_its_replicas_and_a_single_process_run_as_before():
    from conformance.run import Run
    single, replicated = Run("torch", "2.13.0"), Run("torch", "2.13.0", replicas="2")
    assert single.name == "torch-2.13.0-cpu-eager-loop" and single.label == ""
    assert replicated.name == "torch-2.13.0-cpu-eager-loop+dp2" and replicated.label == "2 replicas"
    assert replicated.line == "torch-cpu-eager-loop+dp2" and replicated.describe() == "torch 2.13.0 (cpu, eager, loop, 2 replicas)"


DP_CASES = """\
topic: batchnorm
cases:
  - id: dp-bn
    title: t
    references: [https://example.org/doc]
    matrix: {optimizer: [sgd, adam]}
    data_parallel: {replicas: 2}
    model:
      layers:
        a: {linear: [3, 4]}
        bn: {batchnorm: 4}
        b: {linear: [4, 2]}
    optimizer: {name: sgd, lr: 0.1}
    steps:
      - {path: [a, bn, b], repeat: 2}
    expect:
      - {step: all, loss: reference, grad: {a.weight: reference}, value: {a.weight: reference}, agree: [a.weight, bn.running_mean]}
"""


def test_the_oracle_observes_a_data_parallel_case_and_a_summing_engine_diverges(tmp_path):
    """The engine drives the oracle's replicas; a model of an engine that sums the replicas' gradients (with
    BatchNorm statistics per replica) is told apart from the reference on every check, agree included."""
    from conformance.engine.judge import run_instance
    from conformance.oracle.known import KnownVariant
    (tmp_path / "dp.yaml").write_text(DP_CASES)
    for instance in load_spec(tmp_path):
        assert run_instance(ref.ReferenceRunner(), instance, []).verdict == "conform"
        summing = ref.ReferenceRunner(variants=["replica-grads-summed"])
        record = run_instance(summing, instance, [])
        failed = {c.check.split(" @")[0] for c in record.checks if not c.held}
        assert record.verdict == "divergence" and {"replicas agree on bn.running_mean", "value a.weight"} <= failed
        assert "replicas agree on a.weight" not in failed
        explained = run_instance(ref.ReferenceRunner(variants=["replica-grads-summed"]), instance,
                                 [KnownVariant(variant="replica-grads-summed", reason="r", link=None, replicas=["2"])])
        assert explained.unexplained is None


@pytest.mark.parametrize("find_unused", [False, True])
def test_an_unused_layer_leaves_an_undeclared_step_uncombined_and_refuses_the_next(find_unused):
    from conformance.spec.model import DataParallel
    model = Model.model_validate({"layers": LAYERS})
    rng = np.random.default_rng(0)
    values = {n: rng.normal(size=s) for n, s in [("a.weight", (3, 4)), ("a.bias", (4,)), ("b.weight", (4, 2)),
                                                  ("b.bias", (2,)), ("c.weight", (4, 2)), ("c.bias", (2,))]}
    runner = ref.ReferenceRunner(variants=["unused-params-refused"])
    runner.data_parallel = DataParallel(replicas=2, find_unused=find_unused)
    runner.build(model, values)
    runner.make_optimizer(ref.Optimizer(name="sgd"))
    x, t = rng.normal(size=(8, 3)), rng.normal(size=(8, 2))
    shards = [(["a", "b"], range(0, 4)), (["a", "b"], range(4, 8))]
    runner.forward_replicas(shards, x, t, True, True)
    whole = ref.ReferenceRunner()  # one device: on replica 0's rows alone where the step is left uncombined
    whole.build(model, values)
    whole.make_optimizer(ref.Optimizer(name="sgd"))
    whole.forward(["a", "b"], x[:4] if not find_unused else x, t[:4] if not find_unused else t, True, True)
    assert np.allclose(runner.grads()["a.weight"], whole.grads()["a.weight"])
    assert runner.grads()["c.weight"] is None
    if find_unused:
        assert runner.disagreeing() == set()
        runner.forward_replicas(shards, x, t, True, True)
    else:
        assert {"a.weight", "b.bias"} <= runner.disagreeing()
        with pytest.raises(RuntimeError, match="c.bias got no gradient"):
            runner.forward_replicas(shards, x, t, True, True)


def test_rank_observations_merge_into_the_global_loss_and_what_replicas_disagree_on():
    from conformance.engine.scenario import Observation, StepObservation, merge_replicas
    (instance,) = [i for i in load_spec() if i.id == "dp-unequal-shares-mean[sgd]"]

    def rank(loss, weight, disagree=frozenset()):
        step = StepObservation(loss=loss, grads={}, values={"a.weight": np.array(weight), "b.bias": np.zeros(2)},
                               disagree=disagree)
        return Observation(trainable={}, optimizer_params=[], initial={}, grads_observed=True, steps=[step])
    merged = merge_replicas(instance.case, [rank(1.0, [1.0]), rank(3.0, [2.0])])  # shares 2 and 6
    assert np.isclose(merged.steps[0].loss, 2 / 8 * 1.0 + 6 / 8 * 3.0)
    assert merged.steps[0].disagree == {"a.weight"}
    # a rank whose runner compared the replicas' own copies (a read that averages them agrees): what it found counts
    merged = merge_replicas(instance.case, [rank(1.0, [1.0], frozenset({"b.bias"})), rank(3.0, [1.0])])
    assert merged.steps[0].disagree == {"b.bias"}
    assert merged.steps[0].values["a.weight"] == [1.0]  # rank 0's
    with pytest.raises(ValueError, match="different numbers of steps"):
        merge_replicas(instance.case, [rank(1.0, [1.0]), Observation({}, [], {}, steps=[])])


def test_replicas_normalising_their_own_rows_combine_their_gradients_as_one_device():
    layers = {"a": {"linear": [3, 4]}, "bn": {"batchnorm": 4}, "b": {"linear": [4, 2]}}
    rng = np.random.default_rng(1)
    values = {"a.weight": rng.normal(size=(3, 4)), "a.bias": rng.normal(size=4), "bn.weight": np.ones(4),
              "bn.bias": np.zeros(4), "bn.running_mean": np.zeros(4), "bn.running_var": np.ones(4),
              "b.weight": rng.normal(size=(4, 2)), "b.bias": rng.normal(size=2)}
    x, t = rng.normal(size=(8, 3)), rng.normal(size=(8, 2))

    def step(path, shards, variants):
        runner = ref.ReferenceRunner(variants=variants)
        runner.build(Model.model_validate({"layers": layers}), {n: v.copy() for n, v in values.items()})
        runner.make_optimizer(ref.Optimizer(name="sgd"))
        runner.forward_replicas([(path, rows) for rows in shards], x, t, True, True)
        return runner.grads(), runner.disagreeing()

    halves = [range(0, 4), range(4, 8)]
    one_device, _ = step(["a", "bn", "b"], halves, [])
    own, apart = step(["a", "bn", "b"], halves, ["replica-stats-own-rows"])
    assert not np.allclose(own["a.weight"], one_device["a.weight"])  # each half normalised with its own statistics
    assert {"bn.running_mean", "bn.running_var"} <= apart
    averaged, _ = step(["a", "bn", "b"], halves, ["replica-grads-averaged"])
    assert np.allclose(own["a.weight"], averaged["a.weight"])  # equal shares: the two weigh alike
    # without BatchNorm, unequal shares: the gradients combine as one device's (each sample weighs the same)
    uneven = [range(0, 6), range(6, 8)]
    assert np.allclose(step(["a", "b"], uneven, ["replica-stats-own-rows"])[0]["a.weight"],
                       step(["a", "b"], uneven, [])[0]["a.weight"])


def test_a_synchronized_batchnorm_normalises_every_replica_with_the_global_statistics():
    layers = {"a": {"linear": [3, 4]}, "bn": {"batchnorm": 4, "synchronized": True}, "b": {"linear": [4, 2]}}
    rng = np.random.default_rng(2)
    values = {"a.weight": rng.normal(size=(3, 4)), "a.bias": rng.normal(size=4), "bn.weight": rng.normal(size=4),
              "bn.bias": np.zeros(4), "bn.running_mean": np.zeros(4), "bn.running_var": np.ones(4),
              "b.weight": rng.normal(size=(4, 2)), "b.bias": rng.normal(size=2)}
    x, t = rng.normal(size=(8, 3)), rng.normal(size=(8, 2))
    path = ["a", "bn", "b"]

    def runner_with(variants, start=values):
        runner = ref.ReferenceRunner(variants=variants)
        runner.build(Model.model_validate({"layers": layers}), {n: v.copy() for n, v in start.items()})
        runner.make_optimizer(ref.Optimizer(name="sgd"))
        return runner

    def step(shards, variants):
        runner = runner_with(variants)
        runner.forward_replicas([(path, rows) for rows in shards], x, t, True, True)
        return runner.grads(), runner.values(), runner.disagreeing()

    halves = [range(0, 4), range(4, 8)]
    one_device, stats, _ = step(halves, [])
    for variants, factor in [(["replica-grads-averaged"], 1.0), (["replica-stats-own-rows"], 1.0),
                             (["replica-grads-summed"], 2.0)]:
        grads, got, apart = step(halves, variants)
        assert np.allclose(grads["a.weight"], factor * one_device["a.weight"]), variants
        assert np.allclose(got["bn.running_mean"], stats["bn.running_mean"]) and not apart
    # unequal shares, averaged: the gradient of (L_0 + L_1) / 2, each L_r its own rows' mean loss under the global
    # batch's statistics, by central differences
    uneven = [range(0, 6), range(6, 8)]
    grads = step(uneven, ["replica-grads-averaged"])[0]["a.weight"]

    def objective(weight):
        runner = runner_with([], {**values, "a.weight": weight})
        return sum(0.5 * runner.forward(path, x, t, True, False, loss_rows=rows) for rows in uneven)
    numeric = np.zeros_like(grads)
    for index in np.ndindex(grads.shape):
        bump = np.zeros_like(grads)
        bump[index] = 1e-6
        numeric[index] = (objective(values["a.weight"] + bump) - objective(values["a.weight"] - bump)) / 2e-6
    assert np.allclose(grads, numeric, atol=1e-6)
    assert not np.allclose(grads, step(uneven, [])[0]["a.weight"])


def test_a_touched_layer_gets_a_zero_gradient_that_decay_then_moves_and_no_trainer_runs_it():
    from conformance.engine.scenario import observe, trainer_refusal
    by_id = {i.id: i for i in load_spec()}
    case = by_id["dp-unused-layer-touched[sgd]"].case
    obs = observe(ref.ReferenceRunner(), case)
    assert all(np.array_equal(s.grads["unused.weight"], np.zeros((3, 2))) for s in obs.steps)
    assert not np.allclose(obs.steps[-1].values["unused.weight"], obs.initial["unused.weight"])  # seed 1's decay
    untouched = case.model_copy(update={"steps": [s.model_copy(update={"touch": []}) for s in case.steps]})
    assert all(s.grads["unused.weight"] is None for s in observe(ref.ReferenceRunner(), untouched).steps)
    assert trainer_refusal(case) == "adds parameters times zero to the loss: a trainer computes its loss itself"


def test_a_compiled_path_first_called_by_one_replica_drops_none_of_the_others_gradient():
    """compiled-first-call-sets-grads is about one process's own accumulation: the second replica's first call of
    its path must not drop what the first replica's gradient added to the combined one."""
    shards = [(["a", "b"], range(0, 4)), (["a", "c"], range(4, 8))]
    plain = grads_after(shards)[1]
    compiled = grads_after(shards, ["compiled-first-call-sets-grads"])[1]
    assert np.allclose(compiled["a.weight"], plain["a.weight"])


def test_the_engine_drives_a_room_by_the_data_parallelism_it_declares():
    """One declaration per room: a rank of a RankGroup observes its own rows; an InProcess runner drives every replica
    of its run's count (the oracle's, of any case's), its gradients unobserved where they cannot be read; a room
    declaring none runs no data-parallel case. What starts the processes on N nodes is the declaration's launcher."""
    from conformance.engine.scenario import batch, initial_values, observe
    from conformance.run import Run
    from conformance.runners.base import InProcess, RankGroup, Unsupported
    (instance,) = [i for i in load_spec() if i.id == "dp-unequal-shares-mean[sgd]"]
    case, two = instance.case, Run("reference", replicas="2")

    class Rank(ref.ReferenceRunner):  # each rank alone on its rows: no engine combines them here
        parallelism = RankGroup(launch=lambda world, script: [])
    rank = Rank(two)
    rank.rank = 1
    rows = list(case.data_parallel.rows(case.batch_size)[1])
    x, t = batch(case, 0, case.steps[0].path)
    alone = ref.ReferenceRunner()
    alone.build(case.model, initial_values(case))
    assert np.isclose(observe(rank, case).steps[0].loss,
                      alone.forward(case.steps[0].path, x[rows], t[rows], True, False))

    class Opaque(ref.ReferenceRunner):  # a strategy that combines the replicas' gradients inside its update
        parallelism = InProcess(grads_readable=False)
    opaque = observe(Opaque(two), case)
    assert not opaque.grads_observed and opaque.steps[0].loss == observe(ref.ReferenceRunner(), case).steps[0].loss
    with pytest.raises(Unsupported, match="it runs with --replicas 2"):
        observe(Opaque(), case)

    class Without(ref.ReferenceRunner):
        parallelism = None
    with pytest.raises(Unsupported, match="room has no data parallelism"):
        observe(Without(two), case)
    assert Rank.parallelism.launcher(1) is Rank.parallelism.launcher(2) is Rank.parallelism
    assert InProcess().launcher(1) is InProcess().launcher(2) is None
    assert InProcess(nodes=Rank.parallelism).launcher(2) is Rank.parallelism


def test_an_engine_other_than_the_plain_one_names_its_runs_and_default_scopes_the_plain_one():
    from conformance.oracle.known import KnownVariant, profile
    from conformance.run import Run
    sharded = Run("torch", "2.13.0", replicas="2", engine="fsdp2")
    assert sharded.name == "torch-2.13.0-cpu-eager-loop+dp2+fsdp2" and sharded.label == "2 replicas (fsdp2)"
    assert sharded.describe() == "torch 2.13.0 (cpu, eager, loop, 2 replicas (fsdp2))"
    plain_only = KnownVariant(variant="unused-params-refused", reason="r", link=None, replicas=["2"],
                              engines=["default"])
    fsdp1_only = KnownVariant(variant="sharded-unused-grads-zero", reason="r", link=None, replicas=["2"],
                              engines=["fsdp1"])
    in_force = lambda run: [v.variant for v in profile([plain_only, fsdp1_only], run)]
    assert in_force(Run("torch", "2.13.0", replicas="2")) == ["unused-params-refused"]
    assert in_force(Run("torch", "2.13.0", replicas="2", engine="fsdp1")) == ["sharded-unused-grads-zero"]
    assert in_force(sharded) == []


def _sharded_runner(variants, replicas=2):
    from conformance.spec.model import DataParallel
    model = Model.model_validate({"layers": LAYERS})
    rng = np.random.default_rng(0)
    values = {n: rng.normal(size=s) for n, s in [("a.weight", (3, 4)), ("a.bias", (4,)), ("b.weight", (4, 2)),
                                                  ("b.bias", (2,)), ("c.weight", (4, 2)), ("c.bias", (2,))]}
    runner = ref.ReferenceRunner(variants=variants)
    runner.data_parallel = DataParallel(replicas=replicas, find_unused=True)
    runner.build(model, values)
    return runner, rng.normal(size=(8, 3)), rng.normal(size=(8, 2))


def test_a_sharded_engine_gives_an_unused_layer_zeros_that_decay_moves():
    runner, x, t = _sharded_runner(["sharded-unused-grads-zero"])
    runner.make_optimizer(ref.Optimizer(name="sgd", weight_decay=0.1))
    before = runner.values()["c.weight"]
    runner.forward_replicas([(["a", "b"], range(0, 4)), (["a", "b"], range(4, 8))], x, t, True, True)
    assert np.array_equal(runner.grads()["c.weight"], np.zeros((4, 2)))
    runner.update()
    assert np.allclose(runner.values()["c.weight"], before * (1 - 0.1 * 0.1))


def test_clipping_per_shard_scales_each_replicas_piece_of_the_flat_gradient_by_its_own_norm():
    """a.weight (3, 4) is 12 values as (out, in), a.bias 4, b.weight 8, b.bias 2 (then 2 of padding), c.weight 8,
    c.bias 2, each starting at a multiple of 4: 38 values, 19 per replica. Replica 0 clips a.weight, a.bias and
    b.weight's first 3 by their norm; replica 1 the rest of b by theirs (c has no gradient)."""
    runner, x, t = _sharded_runner(["clip-norm-per-shard"])
    runner.make_optimizer(ref.Optimizer(name="sgd", clip_global_norm=1e-3))
    runner.forward_replicas([(["a", "b"], range(0, 4)), (["a", "b"], range(4, 8))], x, t, True, True)
    grads = runner.grads()
    live = [n for n in grads if grads[n] is not None]
    scale = runner._clip_scales(grads, live)
    flat = lambda n, a: (a.T if n.endswith("weight") else a).ravel()  # linear weights as (out, in)
    first = np.concatenate([flat("a.weight", grads["a.weight"]), grads["a.bias"], flat("b.weight", grads["b.weight"])[:3]])
    assert np.allclose(flat("a.weight", scale["a.weight"]), 1e-3 / np.linalg.norm(first))
    b = flat("b.weight", scale["b.weight"])
    assert np.allclose(b[:3], b[0]) and not np.allclose(b[3:], b[0])


def test_replicas_on_different_layers_of_one_size_swap_gradients_by_position():
    """Replica 0 runs a -> b, replica 1 a -> c (b and c both (4, 2): as (out, in), 2 rows, one per replica). Replica
    0's shard of b (row 0) gets the mean of its own b row 0 and replica 1's c row 0; replica 1 holds no gradient of
    b's row 1, which NaN marks and the update leaves alone."""
    shards = [(["a", "b"], range(0, 4)), (["a", "c"], range(4, 8))]
    runner, x, t = _sharded_runner(["replica-grads-packed-by-position", "replica-grads-averaged"])
    runner.make_optimizer(ref.Optimizer(name="sgd"))
    before = runner.values()
    runner.forward_replicas(shards, x, t, True, True)
    alone = []
    for path, rows in shards:  # each replica's own mean-loss gradient
        own = ref.ReferenceRunner()
        own.build(Model.model_validate({"layers": LAYERS}), before)
        own.make_optimizer(ref.Optimizer(name="sgd"))
        own.forward(path, x[list(rows)], t[list(rows)], True, True)
        alone.append(own.grads())
    b, c = runner.grads()["b.weight"].T, runner.grads()["c.weight"].T  # as (out, in)
    mixed = (alone[0]["b.weight"].T + alone[1]["c.weight"].T) / 2
    assert np.allclose(b[0], mixed[0]) and np.isnan(b[1]).all()
    assert np.allclose(c[1], mixed[1]) and np.isnan(c[0]).all()
    assert np.allclose(runner.grads()["a.weight"], (alone[0]["a.weight"] + alone[1]["a.weight"]) / 2)
    runner.update()
    after = runner.values()
    assert np.array_equal(after["b.weight"].T[1], before["b.weight"].T[1])
    assert np.allclose(after["b.weight"].T[0], before["b.weight"].T[0] - 0.1 * mixed[0])  # lr 0.1


@pytest.mark.parametrize("variants, decayed", [([], {"a.weight", "b.weight"}), (["ndim-filter-sees-flat"], set())])
def test_an_ndim_filter_spares_the_biases_unless_the_engine_shows_every_parameter_flat(variants, decayed):
    runner, x, t = _sharded_runner(variants)
    runner.make_optimizer(ref.Optimizer(name="adamw", weight_decay=0.1, no_decay_ndim_below=2))
    runner.forward_replicas([(["a", "b"], range(0, 4)), (["a", "b"], range(4, 8))], x, t, True, True)
    runner.update()
    assert {n for n, on in runner.decayed().items() if on} == decayed
