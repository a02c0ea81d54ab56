"""What the mindspore room's tests share: the spec by instance id, one case's record through the adapter
(in-process, as the worker runs it), and the pieces of a hand-written MindSpore schedule (nn.Dense layers
holding a case's initial values, value_and_grad over the optimizer's parameters, optimizer(grads))."""
import numpy as np

import mindspore as ms
from mindspore import Tensor, nn

from conformance.engine.judge import run_instance
from conformance.engine.scenario import batch, initial_values
from conformance.oracle.known import load_known, profile
from conformance.runners.mindspore.runner import MindSporeRunner
from conformance.spec import load_spec

SPEC = {i.id: i for i in load_spec()}


def record(instance_id, **axes):
    """The suite's record of one instance on the mindspore adapter of the run `axes` name (PyNative loop
    by default). A graph runner leaves MindSpore in GRAPH_MODE: tests/conftest.py restores PyNative after
    each test."""
    runner = MindSporeRunner(**axes)
    run = runner.run.replace(version=MindSporeRunner.version())
    return run_instance(runner, SPEC[instance_id], profile(load_known("mindspore"), run))


def tensors(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [Tensor(rng.normal(size=s).astype(np.float32)) for s in shapes]


def grads_by_name(opt, grads):
    return {p.name: g.asnumpy() for p, g in zip(opt.parameters, grads)}


def load(dense, init, name):
    """nn.Dense `dense` holding layer `name`'s initial values (canonical (in, out) -> MindSpore's (out, in))."""
    dense.weight.set_data(Tensor(np.ascontiguousarray(init[f"{name}.weight"].T)))
    if dense.bias is not None:
        dense.bias.set_data(Tensor(init[f"{name}.bias"]))


def dense(case, name):
    """nn.Dense for a linear layer of the case, holding its initial values."""
    spec = case.model.layers[name]
    layer = nn.Dense(*spec.linear, has_bias=spec.bias)
    load(layer, initial_values(case), name)
    return layer


def dense_net(case, *names):
    """A user's Cell with one nn.Dense attribute per linear layer `names` of the case, at its initial values."""
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            for name in names:
                setattr(self, name, dense(case, name))
    return Net()


def train(net, opt, case, update=None):
    """The case's steps (path a, b) by hand: value_and_grad, then `update(grads)` or optimizer(grads)."""
    grad_fn = ms.value_and_grad(lambda x, t: ((net.b(net.a(x)) - t) ** 2).mean(), None, opt.parameters)
    net.set_train()
    for index in range(sum(step.repeat for step in case.steps)):
        x, t = batch(case, index, ["a", "b"])
        _, grads = grad_fn(Tensor(x), Tensor(t))
        (update or opt)(grads)
