"""MindSpore: the semantics the adapter observes match MindSpore's own documentation, the adapter is
faithful to hand-written MindSpore code, the full run works, and seed 3 reproduces in its original
shape (a Cell with conv1 -> stop_gradient -> conv2 -> conv3, or conv1 frozen with requires_grad=False),
agreeing with the suite's verdict.

Runs in the `mindspore` tox env only (mindspore and numpy<2 are installed there alone). Each divergence
of the run was confirmed by a standalone MindSpore snippet; the tests below carry the same checks, so
the confirmation lives in the repository too.
"""
import numpy as np
import pytest

import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

from conformance import results
from conformance.__main__ import main
from conformance.execute import run_instance
from conformance.runners.base import Unavailable, Unsupported
from conformance.runners.mindspore import MindSporeRunner
from conformance.scenario import batch, initial_values, observe
from conformance.schema import SPEC_DIR, load_known, load_spec, profile
from conftest import explained_undocumented, missing_features, profile_gaps

SPEC = {i.id: i for i in load_spec(SPEC_DIR)}
PROFILE = profile(load_known("mindspore"), ms.__version__)
RUNNER = MindSporeRunner("cpu")  # one per process: it sets MindSpore's context and device


def suite_record(instance_id):
    """The suite's verdict for one instance, run in-process on the mindspore adapter."""
    return run_instance(RUNNER, SPEC[instance_id], PROFILE)


def graph_record(instance_id, api="loop"):
    """The suite's verdict for one instance in GRAPH_MODE (the caller restores PyNative)."""
    runner = MindSporeRunner("cpu", "graph", api)
    return run_instance(runner, SPEC[instance_id], profile(load_known("mindspore"), ms.__version__, "graph", api))


def tensors(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [Tensor(rng.normal(size=s).astype(np.float32)) for s in shapes]


class Two(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.spare, self.b = nn.Dense(4, 4), nn.Dense(4, 4), nn.Dense(4, 2)


def grads_by_name(opt, grads):
    return {p.name: g.asnumpy() for p, g in zip(opt.parameters, grads)}


# ---------------------------------------------------------------- MindSpore's documented semantics
@pytest.mark.parametrize("make_opt", [
    lambda p: nn.SGD(p, learning_rate=0.1, weight_decay=0.01),
    lambda p: nn.Momentum(p, learning_rate=0.1, momentum=0.9),
    lambda p: nn.Adam(p, learning_rate=0.1),
], ids=["sgd_wd", "momentum", "adam"])
def test_unused_layer_gets_zero_grad_and_keeps_moving(make_opt):
    # mindspore#309 (maintainer: such layers "will still receive gradient updates"); seed 1
    net = Two()
    opt = make_opt(net.trainable_params())
    full = ms.value_and_grad(lambda x, t: ((net.b(net.a(x)) - t) ** 2).mean(), None, opt.parameters)
    head = ms.value_and_grad(lambda x, t: ((net.b(x) - t) ** 2).mean(), None, opt.parameters)
    x, t = tensors((8, 4), (8, 2))
    opt(full(x, t)[1])
    before = net.a.weight.asnumpy().copy()
    _, grads = head(x, t)  # layer a is not used in this step
    g = grads_by_name(opt, grads)
    assert not np.any(g["a.weight"]) and not np.any(g["spare.weight"])  # zeros, never None
    opt(grads)
    assert not np.array_equal(before, net.a.weight.asnumpy())


def test_stop_gradient_gives_zero_gradient_and_decay_moves_upstream():
    # docs (ops.stop_gradient): "return a zero gradient because x is effectively treated as a constant"
    net = Two()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1, weight_decay=0.01)
    grad_fn = ms.value_and_grad(lambda x, t: ((net.b(ops.stop_gradient(net.a(x))) - t) ** 2).mean(),
                                None, opt.parameters)
    before = net.a.weight.asnumpy().copy()
    _, grads = grad_fn(*tensors((8, 4), (8, 2)))
    assert not np.any(grads_by_name(opt, grads)["a.weight"])
    opt(grads)
    np.testing.assert_allclose(net.a.weight.asnumpy(), before * (1 - 0.1 * 0.01), rtol=1e-6)


def test_requires_grad_false_is_front_end_only():
    # docs (Parameter mapping): requires_grad=False only changes how the parameter is presented;
    # handed to an optimizer (explicitly, or via get_parameters) it gets a zero gradient and decays
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.a, self.bn, self.b = nn.Dense(4, 4), nn.BatchNorm1d(4), nn.Dense(4, 2)
    net = Net()
    net.a.weight.requires_grad = False
    assert "a.weight" not in [p.name for p in net.trainable_params()]
    net.bn.moving_mean.set_data(Tensor(np.full(4, 0.5, np.float32)))
    opt = nn.SGD(net.get_parameters(), learning_rate=0.1, weight_decay=0.1)
    assert {"a.weight", "bn.moving_mean", "bn.moving_variance"} <= {p.name for p in opt.parameters}
    grad_fn = ms.value_and_grad(lambda x, t: ((net.b(net.bn(net.a(x))) - t) ** 2).mean(), None, opt.parameters)
    net.set_train(False)  # eval: BatchNorm itself leaves its statistics alone
    w0 = net.a.weight.asnumpy().copy()
    _, grads = grad_fn(*tensors((8, 4), (8, 2)))
    g = grads_by_name(opt, grads)
    assert not np.any(g["a.weight"]) and not np.any(g["bn.moving_mean"])
    opt(grads)
    np.testing.assert_allclose(net.a.weight.asnumpy(), w0 * (1 - 0.1 * 0.1), rtol=1e-6)
    np.testing.assert_allclose(net.bn.moving_mean.asnumpy(), 0.5 * (1 - 0.1 * 0.1), rtol=1e-6)


@pytest.mark.parametrize("grouped", [False, True])
def test_gamma_beta_are_exempt_from_weight_decay_unless_grouped(grouped):
    # docs (nn.Momentum, nn.SGD ...): "If parameters are not grouped, the weight_decay in optimizer will
    # be applied on the network parameters without 'beta' or 'gamma' in their names"
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(4)
    net = Net()
    net.bn.gamma.set_data(Tensor(np.full(4, 2.0, np.float32)))
    params = net.trainable_params()
    opt = nn.SGD([{"params": params}] if grouped else params, learning_rate=0.1, weight_decay=0.5)
    opt(tuple(ops.zeros_like(p) for p in opt.parameters))  # a zero gradient: only decay can move it
    assert net.bn.gamma.asnumpy()[0] == pytest.approx(1.9 if grouped else 2.0)


def test_adam_weight_decay_has_no_bias_correction():
    # docs (nn.AdamWeightDecay): w <- w - lr * (m / (sqrt(v) + eps) + wd * w), m and v uncorrected
    lr, b1, b2, eps, wd = 0.05, 0.9, 0.999, 1e-8, 0.1
    g = np.array([0.3, -0.2, 1e-3, 2.0], np.float32)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.ones(4, np.float32)), name="w")
    net = Net()
    opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=lr, beta1=b1, beta2=b2, eps=eps, weight_decay=wd)
    opt((Tensor(g),))
    m, v = (1 - b1) * g.astype(np.float64), (1 - b2) * g.astype(np.float64) ** 2
    np.testing.assert_allclose(net.w.asnumpy(), 1 - lr * (m / (np.sqrt(v) + eps) + wd), rtol=1e-5)


def test_adam_adds_eps_before_the_bias_correction():
    # docs (ops.Adam, the primitive nn.Adam runs): lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t),
    # w -= lr_t * m / (sqrt(v) + eps); the nn.Adam page shows eps added to sqrt(v_hat) instead
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
    g = np.array([1e-3, 1e-5, 1e-7, 1.0], np.float32)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.zeros(4, np.float32)), name="w")
    net = Net()
    nn.Adam(net.trainable_params(), learning_rate=lr, beta1=b1, beta2=b2, eps=eps)((Tensor(g),))
    step = -net.w.asnumpy().astype(np.float64)
    m, v = (1 - b1) * g.astype(np.float64), (1 - b2) * g.astype(np.float64) ** 2
    np.testing.assert_allclose(step, lr * np.sqrt(1 - b2) / (1 - b1) * m / (np.sqrt(v) + eps), rtol=1e-5)
    textbook = lr * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps)
    assert not np.allclose(step, textbook, rtol=1e-4)  # small gradients take visibly smaller steps


@pytest.mark.parametrize("kind", ["list", "dict", "tuple", "CellList", "CellDict"])
def test_plain_containers_are_not_registered(kind):
    # docs (nn.CellList): "cells it contains are properly registered, and will be visible by all Cell methods"
    registered = kind.startswith("Cell")
    wrap = {"list": list, "tuple": tuple, "CellList": nn.CellList, "dict": lambda b: dict(zip("ab", b)),
            "CellDict": lambda b: nn.CellDict(dict(zip("ab", b)))}[kind]

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.blocks = wrap([nn.Dense(4, 4), nn.BatchNorm1d(4)])
            self.head = nn.Dense(4, 2)
    net = Net()
    assert len(net.trainable_params()) == (6 if registered else 2)
    net.set_train(True)
    bn = list(net.blocks.values() if kind in ("dict", "CellDict") else net.blocks)[1]
    assert bn.training == registered  # a Cell starts with training=False; set_train misses plain containers


def test_batchnorm_momentum_convention():
    # docs (BatchNorm1d mapping): MindSpore's momentum weighs the old value: torch momentum 0.1 is 0.9 here;
    # the running variance is unbiased
    bn = nn.BatchNorm1d(1, momentum=0.9)
    bn.set_train(True)
    bn(Tensor(np.array([[1.0], [3.0]], np.float32)))
    assert bn.moving_mean.asnumpy()[0] == pytest.approx(0.2)
    assert bn.moving_variance.asnumpy()[0] == pytest.approx(1.1)


# ---------------------------------------------------------------- the adapter is faithful
def _load(dense, init, name):
    dense.weight.set_data(Tensor(np.ascontiguousarray(init[f"{name}.weight"].T)))  # (in, out) -> (out, in)
    dense.bias.set_data(Tensor(init[f"{name}.bias"]))


def _dense_net(case, **shapes):
    """A user's Cell with one nn.Dense(in, out) attribute per name, loaded with the case's initial values."""
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            for name, shape in shapes.items():
                setattr(self, name, nn.Dense(*shape))
    net = Net()
    init = initial_values(case)
    for name in shapes:
        _load(getattr(net, name), init, name)
    return net


def test_adapter_is_faithful_to_plain_mindspore_code():
    """seed-1 through the adapter equals the same schedule written by hand in MindSpore."""
    case = SPEC["seed-1-decay-moves-unused-layer[momentum]"].case
    obs = observe(MindSporeRunner("cpu"), case)
    net = _dense_net(case, first=(4, 4), second=(4, 2))
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9, weight_decay=0.0005)
    net.set_train()
    for index, path in enumerate([[net.first, net.second], [net.second]]):
        def forward_fn(x, t):
            for layer in path:
                x = layer(x)
            return ((x - t) ** 2).mean()
        x, t = batch(case, index, case.steps[index].path)
        loss, grads = ms.value_and_grad(forward_fn, None, opt.parameters)(Tensor(x), Tensor(t))
        opt(grads)
        assert obs.steps[index].loss == float(loss.asnumpy())
    np.testing.assert_array_equal(obs.steps[-1].values["first.weight"], net.first.weight.asnumpy().T)
    np.testing.assert_array_equal(obs.steps[-1].values["second.weight"], net.second.weight.asnumpy().T)


def test_adapter_accumulates_as_the_documented_accumulator():
    """two-backward-accumulate: the adapter's no-clear step equals adding the returned tuples by hand
    (the MindSpore tutorials' Accumulator), then one optimizer(grads)."""
    case = SPEC["two-backward-accumulate"].case
    obs = observe(MindSporeRunner("cpu"), case)
    net = _two_dense(case)
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    grad_fn = ms.value_and_grad(lambda x, t: ((net.b(net.a(x)) - t) ** 2).mean(), None, opt.parameters)
    net.set_train()
    accumulated = None
    for index in range(2):
        x, t = batch(case, index, ["a", "b"])
        _, grads = grad_fn(Tensor(x), Tensor(t))
        accumulated = grads if accumulated is None else ops.HyperMap()(ops.add, accumulated, grads)
    opt(accumulated)
    np.testing.assert_array_equal(obs.steps[1].grads["a.weight"], grads_by_name(opt, accumulated)["a.weight"].T)
    np.testing.assert_array_equal(obs.steps[1].values["a.weight"], net.a.weight.asnumpy().T)


def test_adapter_batchnorm_is_faithful():
    """bn-custom-momentum-eps: neutral momentum 0.3 / eps 1e-3 is nn.BatchNorm1d(momentum=0.7, eps=1e-3)."""
    case = SPEC["bn-custom-momentum-eps"].case
    obs = observe(MindSporeRunner("cpu"), case)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.a, self.bn, self.b = nn.Dense(4, 3), nn.BatchNorm1d(3, eps=1e-3, momentum=0.7), nn.Dense(3, 2)
    net = Net()
    init = initial_values(case)
    _load(net.a, init, "a")
    _load(net.b, init, "b")
    for param, name in ((net.bn.gamma, "weight"), (net.bn.beta, "bias"), (net.bn.moving_mean, "running_mean"),
                        (net.bn.moving_variance, "running_var")):
        param.set_data(Tensor(init[f"bn.{name}"]))
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    grad_fn = ms.value_and_grad(lambda x, t: ((net.b(net.bn(net.a(x))) - t) ** 2).mean(), None, opt.parameters)
    net.set_train()
    for index in range(3):
        x, t = batch(case, index, ["a", "bn", "b"])
        loss, grads = grad_fn(Tensor(x), Tensor(t))
        opt(grads)
        assert obs.steps[index].loss == float(loss.asnumpy())
    np.testing.assert_array_equal(obs.steps[-1].values["bn.running_mean"], net.bn.moving_mean.asnumpy())
    np.testing.assert_array_equal(obs.steps[-1].values["bn.running_var"], net.bn.moving_variance.asnumpy())
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], net.a.weight.asnumpy().T)


def test_clearing_to_none_is_unsupported():
    with pytest.raises(Unsupported, match="no None gradient"):
        observe(MindSporeRunner("cpu"), SPEC["unused-param-grad[none]"].case)


# ---------------------------------------------------------------- issue 14: defaults, LayerNorm, freezing
# between steps, decay exclusion, per-tensor clipping, learning-rate changes
def _two_dense(case):
    return _dense_net(case, a=(4, 3), b=(3, 2))


def _train(net, opt, case, update=None):
    """The case's steps (path a, b) by hand: value_and_grad, then `update(grads)` or optimizer(grads)."""
    grad_fn = ms.value_and_grad(lambda x, t: ((net.b(net.a(x)) - t) ** 2).mean(), None, opt.parameters)
    net.set_train()
    for index in range(sum(step.repeat for step in case.steps)):
        x, t = batch(case, index, ["a", "b"])
        _, grads = grad_fn(Tensor(x), Tensor(t))
        (update or opt)(grads)


@pytest.mark.parametrize("instance, built", [
    ("default-adamw-step", lambda p: nn.AdamWeightDecay(p)),
    ("default-lr[sgd]", lambda p: nn.SGD(p, weight_decay=0.0)),
    ("default-adam-eps[adam]", lambda p: nn.Adam(p, learning_rate=0.05, beta1=0.9, beta2=0.999, weight_decay=0.0)),
])
def test_defaults_are_read_back_from_the_built_optimizer(instance, built):
    """The adapter leaves "default" settings out and reports what the optimizer holds; it equals an
    optimizer a user builds without them, read back and stepped by hand."""
    case = SPEC[instance].case
    obs = observe(MindSporeRunner("cpu"), case)
    net = _two_dense(case)
    opt = built(net.trainable_params())
    def number(x):
        return float(np.asarray(x.asnumpy() if hasattr(x, "asnumpy") else x).reshape(-1)[0])
    read = {"lr": lambda: number(opt.learning_rate), "weight_decay": lambda: number(opt.weight_decay),
            "eps": lambda: number(opt.eps), "betas": lambda: [number(opt.beta1), number(opt.beta2)]}
    assert obs.defaults
    for name, value in obs.defaults.items():
        assert value == pytest.approx(read[name.split(".")[1]](), rel=1e-6), name
    _train(net, opt, case)
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], net.a.weight.asnumpy().T)


def test_norm_defaults_are_read_back_and_act():
    """default-bn-momentum / default-layernorm-eps: the values read back are the ones the layers use."""
    obs = observe(MindSporeRunner("cpu"), SPEC["default-bn-momentum"].case)
    bn = nn.BatchNorm1d(2)  # as the adapter builds it: momentum left out
    bn.set_train(True)
    bn(Tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)))  # batch mean [2, 3], moving mean starts at 0
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), obs.defaults["bn.momentum"] * np.array([2.0, 3.0]), rtol=1e-6)
    obs = observe(MindSporeRunner("cpu"), SPEC["default-layernorm-eps"].case)
    ln = nn.LayerNorm((3,))
    x = np.array([[1.0, 1.001, 1.002]])  # a variance of 6.7e-7: the epsilon shows
    want = (x - x.mean()) / np.sqrt(x.var() + obs.defaults["ln.eps"])
    np.testing.assert_allclose(ln(Tensor(x.astype(np.float32))).asnumpy(), want, atol=2e-3)
    assert not np.allclose(want, (x - x.mean()) / np.sqrt(x.var() + 1e-5), atol=2e-3)  # torch's default differs


@pytest.mark.parametrize("instance", ["default-lr[momentum]", "default-momentum"])
def test_momentum_has_no_default_lr_or_momentum(instance):
    with pytest.raises(TypeError, match="missing a required argument"):
        nn.Momentum(nn.Dense(2, 1).trainable_params(), **({"momentum": 0.9} if "lr" in instance else {"learning_rate": 0.1}))
    with pytest.raises(Unsupported, match="nn.Momentum has no default .*: it is a required argument"):
        observe(MindSporeRunner("cpu"), SPEC[instance].case)


def test_layer_freeze_sets_requires_grad_of_weight_and_bias_only():
    """MindSpore has no layer-level switch: freezing layer `bn` sets requires_grad on gamma and beta; the
    moving statistics stay untrainable when it is unfrozen."""
    runner = MindSporeRunner("cpu")
    case = SPEC["freeze-bn-mid-training"].case
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    runner.set_trainable(["bn"], False)
    assert not any(runner.trainable()[f"bn.{r}"] for r in ("weight", "bias", "running_mean", "running_var"))
    assert [p.name for p in runner.net.trainable_params()] == ["fc.weight", "fc.bias", "out.weight", "out.bias"]
    runner.set_trainable(["bn"], True)
    assert {r: runner.trainable()[f"bn.{r}"] for r in ("weight", "bias", "running_mean", "running_var")} == \
        {"weight": True, "bias": True, "running_mean": False, "running_var": False}


def test_unfrozen_layer_stays_out_of_an_optimizer_built_while_frozen():
    """unfreeze-resumes[sgd,default] (default-collection-skips-frozen): the adapter's optimizer never holds
    `a`, and `a` stays put after unfreezing, as the hand-written snippet shows."""
    obs = observe(MindSporeRunner("cpu"), SPEC["unfreeze-resumes[sgd,default]"].case)
    assert obs.optimizer_params == ["b.weight", "b.bias"]
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], obs.initial["a.weight"])
    assert obs.steps[-1].grads["a.weight"] is None


def test_freeze_after_optimizer_gives_zero_gradient_in_pynative():
    """freeze-after-optimizer[momentum,default]: a layer frozen once the optimizer holds it gets zeros from
    value_and_grad in PyNative (functional-zero-filled-grads), and momentum keeps moving it."""
    obs = observe(MindSporeRunner("cpu"), SPEC["freeze-after-optimizer[momentum,default]"].case)
    assert not np.any(obs.steps[2].grads["a.weight"]) and np.any(obs.steps[2].grads["b.weight"])
    assert not np.array_equal(obs.steps[2].values["a.weight"], obs.steps[1].values["a.weight"])


def test_no_decay_equals_hand_written_group_parameters():
    """no-decay-biases[momentum]: the adapter's exclusion is MindSpore's group parameters, weight_decay 0.0."""
    case = SPEC["no-decay-biases[momentum]"].case
    obs = observe(MindSporeRunner("cpu"), case)
    net = _two_dense(case)
    biases = [net.a.bias, net.b.bias]
    groups = [{"params": [net.a.weight, net.b.weight]}, {"params": biases, "weight_decay": 0.0}]
    opt = nn.Momentum(groups, learning_rate=0.1, momentum=0.9, weight_decay=0.1)
    _train(net, opt, case)
    for name, param in (("a.weight", net.a.weight), ("b.bias", net.b.bias)):
        np.testing.assert_allclose(obs.steps[-1].values[name], param.asnumpy().T, rtol=1e-6, atol=1e-7)
    undecayed = SPEC["no-decay-everything[sgd]"].case  # and the exclusion does act: all excluded = no decay
    obs = observe(MindSporeRunner("cpu"), undecayed)
    assert not np.array_equal(obs.initial["a.weight"], obs.steps[-1].values["a.weight"])
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], obs.steps[0].values["a.weight"])


def test_per_tensor_clipping_equals_clip_by_norm_of_each_gradient():
    """clip-per-variable[sgd]: each gradient clipped by ops.clip_by_norm on its own; the tuple form of
    ops.clip_by_norm clips by the joint norm instead, which would give other values."""
    case = SPEC["clip-per-variable[sgd]"].case
    obs = observe(MindSporeRunner("cpu"), case)
    results_by_form = {}
    for form in ("each", "tuple"):
        net = _two_dense(case)
        opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
        clip = (lambda g: tuple(ops.clip_by_norm(x, 0.05) for x in g)) if form == "each" else \
            (lambda g: ops.clip_by_norm(g, 0.05))
        _train(net, opt, case, update=lambda g: opt(clip(g)))
        results_by_form[form] = net.a.weight.asnumpy().T
    np.testing.assert_allclose(obs.steps[-1].values["a.weight"], results_by_form["each"], rtol=1e-6, atol=1e-7)
    assert not np.allclose(results_by_form["each"], results_by_form["tuple"], rtol=1e-4)


def test_no_clip_is_left_out_of_the_global_norm():
    """clip-excluded-param[global]: b.bias moves by its full gradient, the others by the clipped share."""
    case = SPEC["clip-excluded-param[global]"].case
    obs = observe(MindSporeRunner("cpu"), case)
    step = obs.steps[0]
    moved = obs.initial["b.bias"] - step.values["b.bias"]
    np.testing.assert_allclose(moved, 0.1 * step.grads["b.bias"], rtol=1e-5)
    others = [step.grads[n] for n in ("a.weight", "a.bias", "b.weight")]
    scale = 0.05 / np.sqrt(sum(float((g * g).sum()) for g in others))
    np.testing.assert_allclose(obs.initial["a.weight"] - step.values["a.weight"], 0.1 * scale * step.grads["a.weight"],
                               rtol=1e-4, atol=1e-7)


def test_learning_rate_changes_by_assign_not_set_data():
    """The learning_rate Parameter is changed with ops.assign, as MindSpore's LearningRateScheduler callback
    does; Parameter.set_data is not seen by a PyNative optimizer step (found writing this adapter)."""
    moved = {}
    for how in ("assign", "set_data"):
        dense = nn.Dense(2, 1, weight_init="ones", bias_init="zeros")
        opt = nn.SGD(dense.trainable_params(), learning_rate=0.1)
        grads = tuple(ops.ones_like(p) for p in opt.parameters)
        opt(grads)
        before = dense.weight.asnumpy().copy()
        if how == "assign":
            ops.assign(opt.learning_rate, Tensor(0.5, ms.float32))
        else:
            opt.learning_rate.set_data(Tensor(0.5, ms.float32))
        assert float(opt.learning_rate.asnumpy()) == 0.5
        opt(grads)
        moved[how] = float((before - dense.weight.asnumpy()).max())
    assert moved["assign"] == pytest.approx(0.5) and moved["set_data"] == pytest.approx(0.1)
    assert suite_record("lr-change[sgd]").verdict == "conform"


def test_layernorm_is_faithful():
    """layernorm-grads: nn.LayerNorm((5,), epsilon=1e-5), gamma/beta as weight/bias."""
    case = SPEC["layernorm-grads"].case
    obs = observe(MindSporeRunner("cpu"), case)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc, self.ln, self.out = nn.Dense(4, 5), nn.LayerNorm((5,), epsilon=1e-5), nn.Dense(5, 2)
    net = Net()
    init = initial_values(case)
    _load(net.fc, init, "fc")
    _load(net.out, init, "out")
    net.ln.gamma.set_data(Tensor(init["ln.weight"]))
    net.ln.beta.set_data(Tensor(init["ln.bias"]))
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    x, t = batch(case, 0, ["fc", "ln", "out"])
    loss, grads = ms.value_and_grad(lambda x, t: ((net.out(net.ln(net.fc(x))) - t) ** 2).mean(), None,
                                    opt.parameters)(Tensor(x), Tensor(t))
    assert obs.steps[0].loss == float(loss.asnumpy())
    np.testing.assert_array_equal(obs.steps[0].grads["ln.weight"], grads_by_name(opt, grads)["ln.gamma"])


# ---------------------------------------------------------------- issue 16: conv2d, embedding, dropout
def test_conv_is_faithful_and_keeps_the_oihw_layout():
    """conv-bn-running-stats: nn.Conv2d(pad_mode='pad', padding=1, has_bias=False), nn.BatchNorm2d and
    nn.Flatten() before nn.Dense, by hand, give the adapter's losses, gradients and statistics bit for
    bit; the conv weight is exchanged as MindSpore holds it (out, in, kh, kw), with no transpose."""
    case = SPEC["conv-bn-running-stats"].case
    runner = MindSporeRunner("cpu")
    obs = observe(runner, case)
    assert runner.layers["c"].weight.shape == (3, 2, 3, 3) and runner.layers["c"].bias is None
    assert isinstance(runner.layers["bn"], nn.BatchNorm2d)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(2, 3, 3, pad_mode="pad", padding=1, has_bias=False)
            self.bn, self.flat, self.fc = nn.BatchNorm2d(3, momentum=0.9), nn.Flatten(), nn.Dense(48, 2)

        def construct(self, x):
            return self.fc(self.flat(self.bn(self.c(x))))
    net = Net()
    init = initial_values(case)
    net.c.weight.set_data(Tensor(init["c.weight"]))
    np.testing.assert_array_equal(obs.initial["c.weight"], net.c.weight.asnumpy())  # the round trip
    _load(net.fc, init, "fc")
    for param, name in ((net.bn.gamma, "weight"), (net.bn.beta, "bias"), (net.bn.moving_mean, "running_mean"),
                        (net.bn.moving_variance, "running_var")):
        param.set_data(Tensor(init[f"bn.{name}"]))
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
    net.set_train()
    for index in range(2):
        x, t = batch(case, index, ["c", "bn", "fc"])
        loss, grads = grad_fn(Tensor(x), Tensor(t))
        assert obs.steps[index].loss == float(loss.asnumpy())
        np.testing.assert_array_equal(obs.steps[index].grads["c.weight"], grads_by_name(opt, grads)["c.weight"])
        opt(grads)
        np.testing.assert_array_equal(obs.steps[index].values["bn.running_mean"], net.bn.moving_mean.asnumpy())
    assert suite_record("conv-bn-running-stats").verdict == "conform"


def test_embedding_padding_row_gets_a_gradient():
    """padding-row-gets-gradient (confirm/e1_padding_row_gets_gradient.py): nn.Embedding's padding_idx
    zeroes the row when built and nothing after; the table's gradient is dense, zero in rows not
    looked up. The suite documents the divergence with that variant."""
    case = SPEC["embedding-padding-row[sgd]"].case
    obs = observe(MindSporeRunner("cpu"), case)
    x, _ = batch(case, 0, ["emb", "out"])
    grad = obs.steps[0].grads["emb.weight"]
    assert x[0] == 0 and np.abs(grad[0]).max() > 0
    assert not np.any(grad[[r for r in range(10) if r not in set(x.tolist())]])
    assert np.abs(obs.steps[-1].values["emb.weight"][0] - obs.initial["emb.weight"][0]).max() > 0
    assert not np.any(nn.Embedding(10, 4, padding_idx=0).embedding_table.asnumpy()[0])  # zeroed at build
    record = suite_record("embedding-padding-row[sgd]")
    assert record.verdict == "divergence" and record.documented
    assert [v.name for v in record.documented.variants] == ["padding-row-gets-gradient"]


def test_dropout_is_the_identity_in_eval_only():
    """nn.Dropout(p=0.5) through the adapter: eval forward equals the model without it, a train
    forward of the same batch differs; held in a plain list, net.set_train() does not reach it and it
    stays the identity (plain-contained-layers-stay-eval)."""
    case = SPEC["dropout-on-in-train"].case
    runner = MindSporeRunner("cpu")
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    assert isinstance(runner.layers["drop"], nn.Dropout) and runner.layers["drop"].p == 0.5
    x, t = batch(case, 0, ["a", "drop", "b"])
    no_dropout = runner.forward(["a", "b"], x, t, train=False, backward=False)
    assert runner.forward(["a", "drop", "b"], x, t, train=False, backward=False) == no_dropout
    assert runner.forward(["a", "drop", "b"], x, t, train=True, backward=False) != no_dropout
    plain = SPEC["dropout-in-container-follows-eval[plain_list]"].case
    runner.build(plain.model, initial_values(plain))
    runner.make_optimizer(plain.optimizer)
    assert runner.forward(["a", "drop", "b"], x, t, train=True, backward=False) == \
        runner.forward(["a", "b"], x, t, train=True, backward=False)
    assert not runner.layers["drop"].training


# ---------------------------------------------------------------- devices and modes
@pytest.mark.parametrize("device, target", [("cuda", "GPU"), ("ascend", "Ascend")])
def test_absent_backend_is_unavailable(device, target):
    if ms.hal.is_available(target):
        pytest.skip(f"a {target} backend is available here")  # the CLI run covers it: one device per process
    with pytest.raises(Unavailable, match=f"--device {device}: mindspore .* no {target} backend"):
        MindSporeRunner(device)


def test_cuda_refused_with_one_line(capsys):
    if ms.hal.is_available("GPU"):
        pytest.skip("a GPU backend is available here")
    assert main(["run", "--framework", "mindspore", "--device", "cuda"]) == 3
    err = capsys.readouterr().err
    assert "--device cuda" in err and len(err.strip().splitlines()) == 1


def test_graph_mode_is_labelled_graph_mode_and_other_backends_refused(capsys):
    try:
        assert MindSporeRunner("cpu", "graph").backend == "GRAPH_MODE"
        assert ms.get_context("mode") == ms.GRAPH_MODE
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert main(["run", "--framework", "mindspore", "--mode", "graph", "--backend", "inductor"]) == 3
    err = capsys.readouterr().err
    assert "GRAPH_MODE" in err and len(err.strip().splitlines()) == 1


def test_version_is_a_plain_str():
    assert type(MindSporeRunner.version()) is str and MindSporeRunner.version() == ms.__version__


# ---------------------------------------------------------------- the full run
# Every MindSpore divergence is reproduced by its documented variants (runners/mindspore/known.yaml).
# The instances it cannot express clear gradients to None, which MindSpore's functional gradients do
# not have, or leave nn.Momentum's required learning_rate / momentum to a default; those needing a
# spec feature the adapter does not express yet are the engine's to refuse.
NO_DEFAULT = {"default-lr[momentum]", "default-momentum"}
CANNOT = {i for i, inst in SPEC.items() if inst.axes.get("clear") == "none"} | NO_DEFAULT


def test_float32_residual_is_not_semantic():
    """clip-before-l2[adamw]: the oracle's rule (clip to the global norm, then decoupled decay and an
    uncorrected Adam step) applied to MindSpore's own gradients gives MindSpore's values at each step to
    float32 rounding; the 2.3e-5 left against the oracle comes from the gradients of weights that
    differ by float32 rounding, amplified where a gradient changes sign under an uncorrected m / sqrt(v)."""
    obs = observe(MindSporeRunner("cpu"), SPEC["clip-before-l2[adamw]"].case)
    names = list(obs.initial)
    m, v = dict.fromkeys(names, 0.0), dict.fromkeys(names, 0.0)
    for index, step in enumerate(obs.steps):
        grads = {n: step.grads[n].astype(np.float64) for n in names}
        scale = min(1.0, 0.05 / np.sqrt(sum(float((g * g).sum()) for g in grads.values())))
        for n in names:
            g = grads[n] * scale
            m[n], v[n] = 0.9 * m[n] + 0.1 * g, 0.999 * v[n] + 0.001 * g * g
            want = obs.before(index)[n] * (1 - 0.1 * 0.5) - 0.1 * m[n] / (np.sqrt(v[n]) + 1e-8)
            np.testing.assert_allclose(step.values[n], want, atol=5e-6)


def test_full_run(tmp_path):
    out = tmp_path / "mindspore.json"
    assert main(["run", "--framework", "mindspore", "--out", str(out)]) == 0
    doc = results.read(out)
    assert doc.complete and doc.environment.framework_version == ms.__version__
    assert len(doc.cases) == len(SPEC) and {c.id for c in doc.cases} == set(SPEC)
    assert all(c.references for c in doc.cases)
    assert {c.verdict for c in doc.cases} <= {"conform", "divergence", "unsupported"}, "no errors"
    unsupported = {c.id for c in doc.cases if c.verdict == "unsupported"}
    assert unsupported == CANNOT and missing_features(doc) == set()
    assert all("no None gradient" in c.reason or "is a required argument" in c.reason
               for c in doc.cases if c.verdict == "unsupported")
    assert all(c.checks for c in doc.cases if c.verdict != "unsupported")
    unexplained, unused = profile_gaps(doc)
    assert not unexplained, "confirm these with a snippet, then add the variant to runners/mindspore/known.yaml or report them"
    assert not unused, "runners/mindspore/known.yaml lists variants that no divergence needed"
    assert not explained_undocumented(doc)


# GRAPH_MODE and the trainer: what differs from the PyNative loop run. In GRAPH_MODE, a model whose
# Cells in a plain container share a parameter name does not compile (unregistered, they keep the bare
# names, e.g. two nn.Dense 'weight' and 'bias'; conformance/runners/mindspore/confirm/g2_plain_list_graph_refused.py):
# that is the case's error, MindSpore's message. A conv and a BatchNorm there ('weight'; 'gamma', 'beta',
# ...) compile, and show plain-containers-unregistered as in PyNative. The compiled value_and_grad
# keeps the train mode of its first call (compiled-grad-keeps-first-mode, no page states it). The
# trainer adds no divergence: it only cannot express clipping, explicit clearing, lone steps and
# gradient checks.
def _plain_contained_names_clash(case):
    """Whether the Cells the case holds in a plain container have parameters of the same name, as built."""
    if not (case.model.container.startswith("plain") and case.model.contained):
        return False
    runner = MindSporeRunner("cpu")
    runner.build(case.model, initial_values(case))
    names = [p.name for n in case.model.contained for p in runner.layers[n].get_parameters()]
    return len(names) != len(set(names))


DUPLICATE_NAMES = {i for i, inst in SPEC.items() if _plain_contained_names_clash(inst.case)}
TRAINER_CANNOT = ("a trainer clears them its own way", "a trainer step clears, back-propagates and updates together",
                  "trainer does not expose them", "does not clip gradients", "is a required argument")


def _run(tmp_path, mode, api):
    out = tmp_path / f"mindspore-{mode}-{api}.json"
    try:
        assert main(["run", "--framework", "mindspore", "--mode", mode, "--api", api, "--out", str(out)]) == 0
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    doc = results.read(out)
    assert doc.complete and {c.id for c in doc.cases} == set(SPEC)
    assert doc.environment.mode == mode and doc.environment.api == api
    return doc, {v: {c.id for c in doc.cases if c.verdict == v} for v in ("conform", "divergence", "error", "unsupported")}


def _profile_holds(doc, undocumented=(), unobservable=()):
    """As test_full_run's profile checks; `unobservable`: variants in force whose every case errs here."""
    unexplained, unused = profile_gaps(doc)
    assert not unexplained, "confirm these with a snippet, then add the scoped variant to runners/mindspore/known.yaml or report them"
    assert set(unused) == set(unobservable), "runners/mindspore/known.yaml lists variants that no divergence of this run needed"
    assert explained_undocumented(doc) == set(undocumented)


def test_graph_full_run(tmp_path):
    doc, ids = _run(tmp_path, "graph", "loop")
    assert doc.environment.backend == "GRAPH_MODE"
    assert ids["error"] == DUPLICATE_NAMES and len(DUPLICATE_NAMES) == 4
    assert all(c.reason.startswith("RuntimeError: The parameter") and "Please set a unique name for the parameter" in
               c.reason for c in doc.cases if c.verdict == "error")
    assert ids["unsupported"] == CANNOT
    stale = {c.id for c in doc.cases if c.explained_by}
    assert stale == {f"seed-4-bn-stats-not-regularized[{o},default]" for o in ("sgd", "momentum", "adam", "adamw")}
    assert all([v.name for v in c.explained_by.variants] == ["compiled-grad-keeps-first-mode"]
               for c in doc.cases if c.id in stale)
    _profile_holds(doc, stale)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_trainer_full_run(tmp_path, mode):
    doc, ids = _run(tmp_path, mode, "trainer")
    assert ids["error"] == (DUPLICATE_NAMES if mode == "graph" else set())
    assert all(any(why in c.reason for why in TRAINER_CANNOT) for c in doc.cases if c.verdict == "unsupported")
    clipped = {i for i, inst in SPEC.items()
               if inst.case.optimizer.clip_global_norm is not None or inst.case.optimizer.clip_norm is not None}
    refused_clip = {c.id for c in doc.cases if "does not clip" in (c.reason or "")}
    assert refused_clip and refused_clip <= clipped  # the engine refuses some clipped schedules first
    assert ids["conform"] and ids["divergence"]
    _profile_holds(doc)


# ---------------------------------------------------------------- seed 3 in its original shape
class PrintDemo(nn.Cell):
    """The report's Cell (MindSpore 易点通, "gradient not propagated back / weights not updated"), smaller."""

    def __init__(self, stop):
        super().__init__()
        self.stop = stop
        self.conv1 = nn.Conv2d(1, 6, kernel_size=4, stride=1, has_bias=False, weight_init="normal", pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 2, kernel_size=2, pad_mode="valid")
        self.conv3 = nn.Conv2d(2, 6, kernel_size=2, pad_mode="valid")

    def construct(self, x):
        x = self.conv1(x)
        if self.stop:
            x = ops.stop_gradient(x)
        return self.conv3(self.conv2(x))


@pytest.mark.parametrize("variant", ["stop_gradient", "requires_grad_false"])
@pytest.mark.parametrize("collection", ["trainable_params", "get_parameters"])
def test_seed_3_original_shape(variant, collection):
    ms.set_seed(0)
    net = PrintDemo(stop=variant == "stop_gradient")
    if variant == "requires_grad_false":
        for param in net.trainable_params():  # as in the report
            param.requires_grad = "conv1" not in param.name
    params = getattr(net, collection)()
    opt = nn.Momentum(params, learning_rate=0.01, momentum=0.9)
    grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
    net.set_train()
    x, t = tensors((1, 1, 12, 12), (1, 6, 7, 7))
    conv1, conv2 = net.conv1.weight.asnumpy().copy(), net.conv2.weight.asnumpy().copy()
    conv1_grads = []
    for _ in range(3):
        _, grads = grad_fn(x, t)
        conv1_grads += [g.asnumpy() for p, g in zip(opt.parameters, grads) if p is net.conv1.weight]
        opt(grads)
    conv1_fixed = np.array_equal(conv1, net.conv1.weight.asnumpy())
    assert not np.array_equal(conv2, net.conv2.weight.asnumpy())  # the rest trains
    # conv1 is in the optimizer unless it is frozen and the user hands over trainable_params();
    # whenever it is, its gradient is zeros (never None)
    assert len(conv1_grads) == (0 if (variant, collection) == ("requires_grad_false", "trainable_params") else 3)
    assert not any(np.any(g) for g in conv1_grads)
    record = suite_record(f"seed-3-stop-gradient-vs-frozen[momentum,{variant}]")
    conv1_checks = [c for c in record.checks if "conv1.weight" in c.check]
    assert conv1_checks and all(c.held for c in conv1_checks) == conv1_fixed
    assert conv1_fixed and record.verdict == "conform"


def test_seed_3_frozen_with_decay_through_get_parameters():
    """The report's requires_grad=False, but the optimizer gets get_parameters() and has weight decay:
    conv1 moves, as the suite's decay-skips-frozen-param finds."""
    ms.set_seed(0)
    net = PrintDemo(stop=False)
    for param in net.trainable_params():
        param.requires_grad = "conv1" not in param.name
    opt = nn.Momentum(net.get_parameters(), learning_rate=0.01, momentum=0.9, weight_decay=0.01)
    grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
    net.set_train()
    conv1 = net.conv1.weight.asnumpy().copy()
    x, t = tensors((1, 1, 12, 12), (1, 6, 7, 7))
    for _ in range(3):
        opt(grad_fn(x, t)[1])
    moved = not np.array_equal(conv1, net.conv1.weight.asnumpy())
    record = suite_record("decay-skips-frozen-param[momentum,default]")
    assert moved and (record.verdict == "divergence") == moved and record.documented


# ---------------------------------------------------------------- GRAPH_MODE and MindSpore's trainer
@pytest.fixture
def graph_mode():
    """GRAPH_MODE for one test; the context is process-wide, so PyNative is restored after it."""
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _dense(case, name):
    """nn.Dense for a linear layer of the case, holding its initial values."""
    spec, init = case.model.layers[name], initial_values(case)
    dense = nn.Dense(*spec.linear, has_bias=spec.bias)
    dense.weight.set_data(Tensor(np.ascontiguousarray(init[f"{name}.weight"].T)))
    if spec.bias:
        dense.bias.set_data(Tensor(init[f"{name}.bias"]))
    return dense


def test_graph_split_step_equals_a_fused_jit_train_step(graph_mode):
    """seed-1 through the graph adapter (compiled value_and_grad, then a compiled optimizer step) equals
    the tutorials' fused `@ms.jit train_step` in GRAPH_MODE, bit for bit: splitting the step to read
    the gradients between them changes nothing."""
    case = SPEC["seed-1-decay-moves-unused-layer[momentum]"].case
    obs = observe(MindSporeRunner("cpu", "graph"), case)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.first, self.second = _dense(case, "first"), _dense(case, "second")
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


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_trainer_step_equals_model_train(mode):
    """The trainer api (TrainOneStepCell(WithLossCell(...))) equals Model.train on a one-batch dataset
    per step, bit for bit, in PyNative and in GRAPH_MODE: it is the network Model.train runs."""
    from mindspore import Model
    from mindspore import dataset as ds
    case = SPEC["seed-3-stop-gradient-vs-frozen[momentum,stop_gradient]"].case
    try:
        obs = observe(MindSporeRunner("cpu", mode, "trainer"), case)

        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.conv1, self.conv2, self.conv3 = (_dense(case, n) for n in ("conv1", "conv2", "conv3"))

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
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("api", ["loop", "trainer"])
@pytest.mark.parametrize("variant", ["stop_gradient", "requires_grad_false"])
def test_seed_3_report_in_graph_mode(graph_mode, variant, api):
    """The report sets context.GRAPH_MODE: its Cell (without the Print) compiled and trained by the
    tutorials' `@ms.jit train_step` (value_and_grad + Momentum) or by TrainOneStepCell. conv1 stays
    put and the rest trains, as the suite's graph runs find for the same seed."""
    ms.set_seed(0)
    net = PrintDemo(stop=variant == "stop_gradient")
    if variant == "requires_grad_false":
        for param in net.trainable_params():  # as in the report
            param.requires_grad = "conv1" not in param.name
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    if api == "loop":
        def forward_fn(x, t):
            return ((net(x) - t) ** 2).mean()
        grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters)

        @ms.jit
        def step(x, t):
            loss, grads = grad_fn(x, t)
            opt(grads)
            return loss
        net.set_train()
    else:
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        step.set_train()
    x, t = tensors((1, 1, 12, 12), (1, 6, 7, 7))
    conv1, conv2 = net.conv1.weight.asnumpy().copy(), net.conv2.weight.asnumpy().copy()
    for _ in range(3):
        step(x, t)
    conv1_fixed = np.array_equal(conv1, net.conv1.weight.asnumpy())
    assert not np.array_equal(conv2, net.conv2.weight.asnumpy())  # the rest trains
    record = graph_record(f"seed-3-stop-gradient-vs-frozen[momentum,{variant}]", api)
    conv1_checks = [c for c in record.checks if "conv1.weight" in c.check]
    assert conv1_checks and all(c.held for c in conv1_checks) == conv1_fixed
    assert conv1_fixed and record.verdict == "conform"
