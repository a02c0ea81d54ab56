"""The paddle room's other runs, held to the code their users write: graph mode compiled by
paddle.jit.to_static (the loop around a converted Layer) or as a static Program (Executor), hapi's
trainer (paddle.Model.train_batch); the devices; and the runs the room refuses, with one line."""
import numpy as np
import pytest

from conformance.__main__ import main
from conformance.engine.scenario import batch, initial_values, observe
from conformance.run import Run
from conformance.runners import adapter_path, load_adapter
from conformance.runners.base import Unavailable, Unsupported
from conformance.runners.paddle.graph import StaticRunner
from conformance.runners.paddle.runner import PaddleRunner

from .common import SPEC, assert_observes_as_dygraph, paddle, started


# ---------------------------------------------------------------- devices, and what the room refuses
def _has_gpu():
    return paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0


def test_cuda_device():
    if _has_gpu():
        obs = observe(PaddleRunner(device="cuda"), SPEC["sgd-numerics"].case)
        assert len(obs.steps) == 3
        paddle.set_device("cpu")
    else:
        with pytest.raises(Unavailable, match="--device cuda: paddle"):
            PaddleRunner(device="cuda")


def test_ascend_device():
    if "npu" in paddle.device.get_all_custom_device_type():
        pytest.skip("an NPU plugin is installed here")
    with pytest.raises(Unavailable, match="--device ascend: paddle .* no 'npu' custom device"):
        PaddleRunner(device="ascend")


def test_cuda_refused_with_one_line(capsys):
    if _has_gpu():
        pytest.skip("a GPU is available here")
    assert main(["run", "--framework", "paddle", "--device", "cuda"]) == 3
    err = capsys.readouterr().err
    assert "--device cuda" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    (["--mode", "graph", "--backend", "inductor"], "not graph (inductor) loop"),
    (["--mode", "graph", "--api", "trainer"], "not graph (to_static) trainer"),  # hapi's Model is dygraph only
], ids=["unknown-backend", "trainer-in-graph"])
def test_refused_runs_with_one_line(capsys, args, message):
    assert main(["run", "--framework", "paddle", *args]) == 3
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_each_run_gets_its_adapter_class():
    """The class the worker loads for a run (the room's ADAPTERS): the static program's own for backend static,
    the dygraph loop's for the others, graph mode's default backend included; each refuses the other's run."""
    pick = lambda **axes: load_adapter(adapter_path("paddle", Run("paddle", **axes)), "paddle")
    assert pick(mode="graph", backend="static") is StaticRunner
    for axes in ({}, {"mode": "graph"}, {"mode": "graph", "backend": "to_static"}, {"api": "trainer"}):
        assert pick(**axes) is PaddleRunner
    with pytest.raises(Unavailable, match="StaticRunner"):
        PaddleRunner(mode="graph", backend="static")
    with pytest.raises(Unavailable, match="PaddleRunner"):
        StaticRunner(mode="graph", backend="to_static")


def test_version_is_a_plain_str():
    assert type(PaddleRunner.version()) is str and PaddleRunner.version() == paddle.__version__


# ---------------------------------------------------------------- graph mode, backend to_static
def test_to_static_is_called_as_users_call_it():
    """The adapter converts each step (its path and its loss) with paddle.jit.to_static(layer), no full_graph:
    the translator the installed version picks by default (SOT, SymbolicStaticFunction, in 2.6 and 3.x on
    Python 3.8-3.11), the one a user's `paddle.jit.to_static(model)` gets."""
    runner, case = started(PaddleRunner(mode="graph"), "sgd-numerics")
    assert runner.backend == "to_static"
    x, t = batch(case, 0, ["a", "b"])
    runner.forward(["a", "b"], x, t, train=True, backward=True)
    users = paddle.jit.to_static(paddle.nn.Linear(4, 3))
    assert type(runner.compiled[(("a", "b"), True)].forward) is type(users.forward)


def test_sot_runs_a_small_graph_as_dygraph_without_a_word():
    """Why the adapter lowers MIN_GRAPH_SIZE: with the default (10 ops), SOT runs a Linear as plain
    dygraph, so the output carries dygraph's grad node, not the compiled program's."""
    paddle.seed(0)
    y = paddle.jit.to_static(paddle.nn.Linear(4, 2), full_graph=False)(paddle.randn([3, 4]))
    assert y.grad_fn.name() == "AddGradNode"


def test_to_static_runs_the_compiled_program():
    runner, case = started(PaddleRunner(mode="graph"), "bn-train-passes-grad")
    path = case.steps[0].path
    x, t = batch(case, 0, path)
    runner.forward(path, x, t, train=True, backward=True)
    assert list(runner.compiled) == [(tuple(path), True)]  # one compiled Layer per step path and reduction
    loss = runner._compiled_step(path, paddle.to_tensor(x), paddle.to_tensor(t))
    # the run-program node: Dy2StGradNode in Paddle 3; 2.6's does not override name()
    assert loss.grad_fn.name() == ("Dy2StGradNode" if paddle.__version__ >= "3" else "GradNodeBase")


def test_to_static_computes_the_loss_in_the_compiled_step():
    """The loss is inside the converted step, as users write a to_static train step: Paddle 2.6's compiled
    cross-entropy with the default ignore index divides by the whole batch, as its static program does (known.yaml:
    ce-negative-ignore-mean-over-batch), where its dygraph divides by the samples kept."""
    instance = "ce-default-ignore-index[sgd]"
    runner, case = started(PaddleRunner(mode="graph"), instance)
    path = case.steps[0].path
    x, t = batch(case, 0, path)
    compiled = runner.forward(path, x, t, train=True, backward=True, loss=case.cross_entropy)
    runner, _ = started(PaddleRunner(), instance)
    eager = runner.forward(path, x, t, train=True, backward=True, loss=case.cross_entropy)
    kept = int((t != -100).sum())
    assert 0 < kept < len(t)
    assert compiled == pytest.approx(eager * (1 if paddle.__version__ >= "3" else kept / len(t)), rel=1e-5)


def test_to_static_fallback_is_an_error():
    """paddle.jit.enable_to_static(False) makes every to_static function run dygraph: the adapter
    must notice and fail, not report dygraph's behaviour as the compiled program's."""
    runner, case = started(PaddleRunner(mode="graph"), "sgd-numerics")
    x, t = batch(case, 0, ["a", "b"])
    paddle.jit.enable_to_static(False)
    try:
        with pytest.raises(RuntimeError, match="fell back to dygraph"):
            runner.forward(["a", "b"], x, t, train=True, backward=True)
    finally:
        paddle.jit.enable_to_static(True)


def test_to_static_stays_compiled_case_after_case():
    """One worker runs every case of a run, each a program of its own. Paddle 2.6.2's SOT marks a
    converted function's generated code as compiled only in the process's first 20 calls of that
    function's code (shared by every case's step paths), and a generated code left unmarked runs as
    dygraph from its 11th call: the adapter starts SOT's bookkeeping afresh for each case, so a case
    after many others still runs its compiled program on every call (the adapter raises otherwise)."""
    runner, case = started(PaddleRunner(mode="graph"), "sgd-numerics")
    x, t = batch(case, 0, ["a", "b"])
    for _ in range(25):
        runner.forward(["a", "b"], x, t, train=True, backward=True)
    for _ in range(3):  # later cases, on the same runner as the worker's
        runner, case = started(runner, "sgd-numerics")
        for _ in range(15):
            runner.forward(["a", "b"], x, t, train=True, backward=True)


def test_to_static_equals_dygraph_where_no_accumulation_is_involved():
    """seed-1, a BatchNorm case and a plain-listed BatchNorm under to_static observe what dygraph does."""
    for instance_id in ("seed-1-decay-moves-unused-layer[momentum]", "bn-custom-momentum-eps",
                        "train-mode-reaches-contained[plain_list]"):
        assert_observes_as_dygraph(PaddleRunner(mode="graph"), SPEC[instance_id].case, atol=1e-6)


def test_to_static_first_call_sets_grads():
    """compiled-first-call-sets-grads through the adapter: the first call of a newly compiled path
    writes its gradient over the one accumulated before; the second call adds."""
    runner, case = started(PaddleRunner(mode="graph"), "accumulate-across-unused")
    x0, t0 = batch(case, 0, ["a", "b"])
    x1, t1 = batch(case, 1, ["b"])
    runner.clear_grads("default")
    runner.forward(["a", "b"], x0, t0, train=True, backward=True)
    g0 = runner.grads()["b.weight"]
    runner.forward(["b"], x1, t1, train=True, backward=True)  # [b] compiled now: overwrites
    first = runner.grads()["b.weight"]
    runner.forward(["b"], x1, t1, train=True, backward=True)  # compiled before: adds
    second = runner.grads()["b.weight"]
    # with g the [b] pass's own gradient: second = first + g; first = g (lost g0) makes second = 2 * first,
    # first = g0 + g (accumulated, the reference) would make second = g0 + 2 g
    assert np.abs(g0).max() > 1e-3
    np.testing.assert_allclose(second, 2 * first, rtol=1e-5)


# ---------------------------------------------------------------- graph mode, backend static
def test_static_cases_leave_dygraph_on():
    """One worker runs eager, to_static and static cases in turn: static mode is on only inside a
    static step, also when the step fails."""
    observe(StaticRunner(mode="graph", backend="static"), SPEC["sgd-numerics"].case)
    assert paddle.in_dynamic_mode()
    runner, case = started(StaticRunner(mode="graph", backend="static"), "sgd-numerics")
    x, t = batch(case, 0, ["a", "b"])
    with pytest.raises(Exception):  # 3 features cannot feed Linear(4, 3): the program fails to build
        runner.forward(["a", "b"], x[:, :3], t, train=True, backward=True)
    assert paddle.in_dynamic_mode()


def test_static_programs_share_parameters_and_optimizer_state():
    """Cases whose optimizer state (velocity, moments) carries from program to program (the train and
    eval programs of one case share it by name) equal dygraph's run of the same case."""
    for instance_id in ("momentum-numerics", "adam-numerics[adam]", "seed-4-bn-stats-not-regularized[momentum,default]"):
        assert_observes_as_dygraph(StaticRunner(mode="graph", backend="static"), SPEC[instance_id].case, atol=1e-5)


def test_static_program_runs_the_new_layers():
    """An int64 feed for an embedding, conv + BatchNorm2D + flatten, dropout in eval: the same losses
    and values as dygraph where nothing accumulates."""
    for instance_id in ("conv-bn-running-stats", "embedding-rows-not-looked-up-state[adam]", "dropout-off-in-eval"):
        assert_observes_as_dygraph(StaticRunner(mode="graph", backend="static"), SPEC[instance_id].case, atol=1e-5)


def test_static_program_has_no_update_ops_for_bn_statistics():
    """Paddle#9273 (seed 4): Fluid appended L2 decay ops for batch_norm's moving mean / variance. The
    adapter records, per parameter, the ops minimize() appends after the backward pass."""
    runner = StaticRunner(mode="graph", backend="static")
    observe(runner, SPEC["seed-4-bn-stats-not-regularized[momentum,all]"].case)
    assert set(runner.ops) == {"fc.weight", "bn.weight", "bn.bias", "out.weight", "out.bias"}
    # PIR (Paddle 3) names the op pd_op.momentum_, the ProgramDesc of 2.6 momentum
    assert {op.replace("pd_op.", "").replace("_(", "(") for op in runner.ops["bn.weight"]} == {
        "momentum(l2_decay 0.05)"}


@pytest.mark.parametrize("optimizer, weight_decay, decayed", [
    ("sgd", 0.05, True), ("adamw", 0.05, True), ("momentum", 0.05, True), ("momentum", 0.0, False)])
def test_static_program_decay_is_observed_per_parameter(optimizer, weight_decay, decayed):
    """The `decayed` observation is read from the program's ops: a regularization op (scale) or decay
    fused into the update op; with no decay, no parameter is decayed, so the seed-4 check can fail."""
    case = SPEC[f"seed-4-bn-stats-not-regularized[{optimizer},all]"].case
    case = case.model_copy(update={"optimizer": case.optimizer.model_copy(update={"weight_decay": weight_decay})})
    obs = observe(StaticRunner(mode="graph", backend="static"), case)
    assert obs.decayed == {"fc.weight": decayed, "bn.weight": decayed, "bn.bias": decayed, "out.weight": decayed,
                           "out.bias": decayed, "bn.running_mean": False, "bn.running_var": False}
    assert observe(PaddleRunner(), case).decayed is None  # dygraph code builds no program to read


# ---------------------------------------------------------------- api trainer (hapi's Model)
def test_trainer_is_faithful_to_hapi_code():
    """seed-1 through train_step equals hand-written hapi: Model(net).prepare(opt, MSELoss()) and one
    train_batch per batch; the loss it returns is the step's loss before the update."""
    case = SPEC["seed-1-decay-moves-unused-layer[momentum]"].case
    runner, _ = started(PaddleRunner(api="trainer"), "seed-1-decay-moves-unused-layer[momentum]")
    init = initial_values(case)

    class Net(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.first, self.second = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
            self.path = None

        def forward(self, x):
            for layer in self.path:
                x = layer(x)
            return x

    net = Net()
    for layer, name in ((net.first, "first"), (net.second, "second")):
        layer.weight.set_value(init[f"{name}.weight"])
        layer.bias.set_value(init[f"{name}.bias"])
    model = paddle.Model(net)
    model.prepare(paddle.optimizer.Momentum(0.1, momentum=0.9, weight_decay=0.0005, parameters=net.parameters()),
                  paddle.nn.MSELoss())
    for index, step in enumerate(case.steps):
        x, t = batch(case, index, step.path)
        net.path = [getattr(net, n) for n in step.path]
        expected = float(model.train_batch([x], [t])[0])
        assert runner.train_step(step.path, x, t, train=True) == pytest.approx(expected, abs=1e-7)
    for name in ("first.weight", "second.weight"):
        layer, role = name.split(".")
        np.testing.assert_array_equal(runner.values()[name], getattr(getattr(net, layer), role).numpy())


def test_trainer_refuses_eval_steps():
    runner, case = started(PaddleRunner(api="trainer"), "bn-eval-passes-grad")
    x, t = batch(case, 0, case.steps[0].path)
    with pytest.raises(Unsupported, match="train_batch always switches the network to train mode"):
        runner.train_step(case.steps[0].path, x, t, train=False)
