"""The mindspore room's runs besides the PyNative loop, held to the code their users write: GRAPH_MODE
(the tutorials' compiled value_and_grad and optimizer step, and what MindSpore refuses to compile),
MindSpore's trainer (TrainOneStepCell, the network Model.train runs); the devices; and what the room
refuses: runs it does not offer, and cases MindSpore cannot express."""
import numpy as np
import pytest

import mindspore as ms
from mindspore import Tensor, nn, ops

from conformance.__main__ import main
from conformance.engine.scenario import batch, observe
from conformance.runners.base import Unavailable, Unsupported
from conformance.runners.mindspore.runner import MindSporeRunner

from .common import SPEC, dense, record


# ---------------------------------------------------------------- devices, version, refused runs
@pytest.mark.parametrize("device, target", [("cuda", "GPU"), ("ascend", "Ascend")])
def test_absent_backend_is_unavailable(device, target):
    if ms.hal.is_available(target):
        pytest.skip(f"a {target} backend is available here")  # the CLI run covers it: one device per process
    with pytest.raises(Unavailable, match=f"--device {device}: mindspore .* no {target} backend"):
        MindSporeRunner(device=device)


def test_cuda_refused_with_one_line(capsys):
    if ms.hal.is_available("GPU"):
        pytest.skip("a GPU backend is available here")
    assert main(["run", "--framework", "mindspore", "--device", "cuda"]) == 3
    err = capsys.readouterr().err
    assert "--device cuda" in err and len(err.strip().splitlines()) == 1


def test_graph_mode_is_labelled_graph_mode_and_other_backends_refused(capsys):
    assert MindSporeRunner(mode="graph").backend == "GRAPH_MODE"
    assert ms.get_context("mode") == ms.GRAPH_MODE
    assert main(["run", "--framework", "mindspore", "--mode", "graph", "--backend", "inductor"]) == 3
    err = capsys.readouterr().err
    assert "GRAPH_MODE" in err and len(err.strip().splitlines()) == 1


def test_version_is_a_plain_str():
    assert type(MindSporeRunner.version()) is str and MindSporeRunner.version() == ms.__version__


# ---------------------------------------------------------------- cases MindSpore cannot express
def test_clearing_to_none_is_unsupported():
    with pytest.raises(Unsupported, match="no None gradient"):
        observe(MindSporeRunner(), SPEC["unused-param-grad[none]"].case)


@pytest.mark.parametrize("instance", ["default-lr[momentum]", "default-momentum"])
def test_momentum_has_no_default_lr_or_momentum(instance):
    given = {"momentum": 0.9} if "lr" in instance else {"learning_rate": 0.1}  # the other one left out
    with pytest.raises(TypeError, match="missing a required argument"):
        nn.Momentum(nn.Dense(2, 1).trainable_params(), **given)
    with pytest.raises(Unsupported, match="nn.Momentum has no default .*: it is a required argument"):
        observe(MindSporeRunner(), SPEC[instance].case)


# ---------------------------------------------------------------- GRAPH_MODE
def test_graph_split_step_equals_a_fused_jit_train_step(graph_mode):
    """seed-1 through the graph adapter (compiled value_and_grad, then a compiled optimizer step) equals
    the tutorials' fused `@ms.jit train_step` in GRAPH_MODE, bit for bit: splitting the step to read
    the gradients between them changes nothing."""
    case = SPEC["seed-1-decay-moves-unused-layer[momentum]"].case
    obs = observe(MindSporeRunner(mode="graph"), case)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.first, self.second = dense(case, "first"), dense(case, "second")
    net = Net()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9, weight_decay=0.0005)
    net.set_train()
    for index, path in enumerate([[net.first, net.second], [net.second]]):
        def forward_fn(x, t):
            for layer in path:
                x = layer(x)
            return ((x - t) ** 2).mean()
        grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters)

        @ms.jit
        def train_step(x, t):
            loss, grads = grad_fn(x, t)
            opt(grads)
            return loss
        x, t = batch(case, index, case.steps[index].path)
        assert obs.steps[index].loss == float(train_step(Tensor(x), Tensor(t)).asnumpy())
    np.testing.assert_array_equal(obs.steps[-1].values["first.weight"], net.first.weight.asnumpy().T)
    np.testing.assert_array_equal(obs.steps[-1].values["second.weight"], net.second.weight.asnumpy().T)


@pytest.mark.parametrize("api", ["loop", "trainer"])
def test_graph_mode_refusing_to_compile_is_the_cases_error(api):
    """Two nn.Dense in a plain list keep their bare parameter names ('weight', 'bias': unregistered), and
    GRAPH_MODE refuses to compile a graph holding both (confirm/plain_containers_unregistered.py shows it in
    plain code): through the adapter, compiled value_and_grad or TrainOneStepCell, that is the case's
    error with MindSpore's message, not an Unsupported of the adapter (expected.yaml lists these errors).
    The same layers in an nn.CellList (registered: 'blocks.0.weight', ...) compile and train."""
    refused = record("plain-containers-register[plain_list]", mode="graph", api=api)
    assert refused.verdict == "error" and refused.reason.startswith("RuntimeError: The parameter")
    assert "Please set a unique name for the parameter" in refused.reason
    assert record("framework-containers-register[framework_list]", mode="graph", api=api).verdict == "conform"


# ---------------------------------------------------------------- MindSpore's trainer
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_trainer_step_equals_model_train(mode):
    """The trainer api (TrainOneStepCell(WithLossCell(...))) equals Model.train on a one-batch dataset
    per step, bit for bit, in PyNative and in GRAPH_MODE: it is the network Model.train runs."""
    from mindspore import Model
    from mindspore import dataset as ds
    case = SPEC["seed-3-stop-gradient-vs-frozen[momentum,stop_gradient]"].case
    obs = observe(MindSporeRunner(mode=mode, api="trainer"), case)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2, self.conv3 = (dense(case, n) for n in ("conv1", "conv2", "conv3"))

        def construct(self, x):
            return self.conv3(self.conv2(ops.stop_gradient(self.conv1(x))))
    net = Net()
    model = Model(net, nn.MSELoss(), nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9))
    for index in range(3):
        x, t = batch(case, index, ["conv1", "conv2", "conv3"])
        model.train(1, ds.NumpySlicesDataset({"x": x, "t": t}, shuffle=False).batch(len(x)),
                    dataset_sink_mode=False)
    for name in ("conv1", "conv2", "conv3"):
        np.testing.assert_array_equal(obs.steps[-1].values[f"{name}.weight"],
                                      getattr(net, name).weight.asnumpy().T)
    assert not np.array_equal(obs.steps[-1].values["conv2.weight"], obs.initial["conv2.weight"])
