"""The adapter is the MindSpore code a user writes: per layer kind and optimizer feature, its PyNative
run of a case equals the same schedule written by hand in MindSpore (nn.Cell, value_and_grad over
optimizer.parameters, optimizer(grads)), and it builds MindSpore's own Cells and optimizers."""
import numpy as np
import pytest

import mindspore as ms
from mindspore import Tensor, nn, ops

from conformance.engine.scenario import batch, initial_values, observe
from conformance.runners.mindspore.runner import MindSporeRunner

from .common import SPEC, dense, dense_net, grads_by_name, load, record, train


# ---------------------------------------------------------------- the core loop
def test_adapter_is_faithful_to_plain_mindspore_code():
    """seed-1 through the adapter equals the same schedule written by hand in MindSpore: nn.Momentum
    with weight decay, the second step's forward leaving the first layer out."""
    case = SPEC["seed-1-decay-moves-unused-layer[momentum]"].case
    obs = observe(MindSporeRunner(), case)
    net = dense_net(case, "first", "second")
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
    obs = observe(MindSporeRunner(), case)
    net = dense_net(case, "a", "b")
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


# ---------------------------------------------------------------- settings left to MindSpore's defaults
@pytest.mark.parametrize("instance, built", [
    ("default-adamw-step", lambda p: nn.AdamWeightDecay(p)),
    ("default-lr[sgd]", lambda p: nn.SGD(p, weight_decay=0.0)),
    ("default-adam-eps[adam]", lambda p: nn.Adam(p, learning_rate=0.05, beta1=0.9, beta2=0.999, weight_decay=0.0)),
])
def test_defaults_are_read_back_from_the_built_optimizer(instance, built):
    """The adapter leaves "default" settings out and reports what the optimizer holds; it equals an
    optimizer a user builds without them, read back and stepped by hand."""
    case = SPEC[instance].case
    obs = observe(MindSporeRunner(), case)
    net = dense_net(case, "a", "b")
    opt = built(net.trainable_params())

    def number(x):
        return float(np.asarray(x.asnumpy() if hasattr(x, "asnumpy") else x).reshape(-1)[0])
    read = {"lr": lambda: number(opt.learning_rate), "weight_decay": lambda: number(opt.weight_decay),
            "eps": lambda: number(opt.eps), "betas": lambda: [number(opt.beta1), number(opt.beta2)]}
    assert obs.defaults
    for name, value in obs.defaults.items():
        assert value == pytest.approx(read[name.split(".")[1]](), rel=1e-6), name
    train(net, opt, case)
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], net.a.weight.asnumpy().T)


def test_norm_defaults_are_read_back_and_act():
    """default-bn-momentum / default-layernorm-eps: the values read back are the ones the layers use."""
    obs = observe(MindSporeRunner(), SPEC["default-bn-momentum"].case)
    bn = nn.BatchNorm1d(2)  # as the adapter builds it: momentum left out
    bn.set_train(True)
    bn(Tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)))  # batch mean [2, 3], moving mean starts at 0
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), obs.defaults["bn.momentum"] * np.array([2.0, 3.0]), rtol=1e-6)
    obs = observe(MindSporeRunner(), SPEC["default-layernorm-eps"].case)
    ln = nn.LayerNorm((3,))
    x = np.array([[1.0, 1.001, 1.002]])  # a variance of 6.7e-7: the epsilon shows
    want = (x - x.mean()) / np.sqrt(x.var() + obs.defaults["ln.eps"])
    np.testing.assert_allclose(ln(Tensor(x.astype(np.float32))).asnumpy(), want, atol=2e-3)
    assert not np.allclose(want, (x - x.mean()) / np.sqrt(x.var() + 1e-5), atol=2e-3)  # torch's default differs


# ---------------------------------------------------------------- norm layers
def test_adapter_batchnorm_is_faithful():
    """bn-custom-momentum-eps: neutral momentum 0.3 / eps 1e-3 is nn.BatchNorm1d(momentum=0.7, eps=1e-3)."""
    case = SPEC["bn-custom-momentum-eps"].case
    obs = observe(MindSporeRunner(), case)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.a, self.bn, self.b = nn.Dense(4, 3), nn.BatchNorm1d(3, eps=1e-3, momentum=0.7), nn.Dense(3, 2)
    net = Net()
    init = initial_values(case)
    load(net.a, init, "a")
    load(net.b, init, "b")
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


def test_layernorm_is_faithful():
    """layernorm-grads: nn.LayerNorm((5,), epsilon=1e-5), gamma/beta as weight/bias."""
    case = SPEC["layernorm-grads"].case
    obs = observe(MindSporeRunner(), case)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc, self.ln, self.out = nn.Dense(4, 5), nn.LayerNorm((5,), epsilon=1e-5), nn.Dense(5, 2)
    net = Net()
    init = initial_values(case)
    load(net.fc, init, "fc")
    load(net.out, init, "out")
    net.ln.gamma.set_data(Tensor(init["ln.weight"]))
    net.ln.beta.set_data(Tensor(init["ln.bias"]))
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    x, t = batch(case, 0, ["fc", "ln", "out"])
    loss, grads = ms.value_and_grad(lambda x, t: ((net.out(net.ln(net.fc(x))) - t) ** 2).mean(), None,
                                    opt.parameters)(Tensor(x), Tensor(t))
    assert obs.steps[0].loss == float(loss.asnumpy())
    np.testing.assert_array_equal(obs.steps[0].grads["ln.weight"], grads_by_name(opt, grads)["ln.gamma"])


# ---------------------------------------------------------------- freezing between steps
def test_layer_freeze_sets_requires_grad_of_weight_and_bias_only():
    """MindSpore has no layer-level switch: freezing layer `bn` sets requires_grad on gamma and beta; the
    moving statistics stay untrainable when it is unfrozen."""
    runner = MindSporeRunner()
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
    obs = observe(MindSporeRunner(), SPEC["unfreeze-resumes[sgd,default]"].case)
    assert obs.optimizer_params == ["b.weight", "b.bias"]
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], obs.initial["a.weight"])
    assert obs.steps[-1].grads["a.weight"] is None


def test_freeze_after_optimizer_gives_zero_gradient_in_pynative():
    """freeze-after-optimizer[momentum,default]: a layer frozen once the optimizer holds it gets zeros from
    value_and_grad in PyNative (functional-zero-filled-grads), and momentum keeps moving it."""
    obs = observe(MindSporeRunner(), SPEC["freeze-after-optimizer[momentum,default]"].case)
    assert not np.any(obs.steps[2].grads["a.weight"]) and np.any(obs.steps[2].grads["b.weight"])
    assert not np.array_equal(obs.steps[2].values["a.weight"], obs.steps[1].values["a.weight"])


# ---------------------------------------------------------------- decay exclusion and clipping
def test_no_decay_equals_hand_written_group_parameters():
    """no-decay-biases[momentum]: the adapter's exclusion is MindSpore's group parameters, weight_decay 0.0."""
    case = SPEC["no-decay-biases[momentum]"].case
    obs = observe(MindSporeRunner(), case)
    net = dense_net(case, "a", "b")
    biases = [net.a.bias, net.b.bias]
    groups = [{"params": [net.a.weight, net.b.weight]}, {"params": biases, "weight_decay": 0.0}]
    opt = nn.Momentum(groups, learning_rate=0.1, momentum=0.9, weight_decay=0.1)
    train(net, opt, case)
    for name, param in (("a.weight", net.a.weight), ("b.bias", net.b.bias)):
        np.testing.assert_allclose(obs.steps[-1].values[name], param.asnumpy().T, rtol=1e-6, atol=1e-7)
    undecayed = SPEC["no-decay-everything[sgd]"].case  # and the exclusion does act: all excluded = no decay
    obs = observe(MindSporeRunner(), undecayed)
    assert not np.array_equal(obs.initial["a.weight"], obs.steps[-1].values["a.weight"])
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], obs.steps[0].values["a.weight"])


def test_per_tensor_clipping_equals_clip_by_norm_of_each_gradient():
    """clip-per-variable[sgd]: each gradient clipped by ops.clip_by_norm on its own; the tuple form of
    ops.clip_by_norm clips by the joint norm instead, which would give other values."""
    case = SPEC["clip-per-variable[sgd]"].case
    obs = observe(MindSporeRunner(), case)
    results_by_form = {}
    for form in ("each", "tuple"):
        net = dense_net(case, "a", "b")
        opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
        clip = (lambda g: tuple(ops.clip_by_norm(x, 0.05) for x in g)) if form == "each" else \
            (lambda g: ops.clip_by_norm(g, 0.05))
        train(net, opt, case, update=lambda g: opt(clip(g)))
        results_by_form[form] = net.a.weight.asnumpy().T
    np.testing.assert_allclose(obs.steps[-1].values["a.weight"], results_by_form["each"], rtol=1e-6, atol=1e-7)
    assert not np.allclose(results_by_form["each"], results_by_form["tuple"], rtol=1e-4)


def test_no_clip_is_left_out_of_the_global_norm():
    """clip-excluded-param[global]: b.bias moves by its full gradient, the others by the clipped share."""
    case = SPEC["clip-excluded-param[global]"].case
    obs = observe(MindSporeRunner(), case)
    step = obs.steps[0]
    moved = obs.initial["b.bias"] - step.values["b.bias"]
    np.testing.assert_allclose(moved, 0.1 * step.grads["b.bias"], rtol=1e-5)
    others = [step.grads[n] for n in ("a.weight", "a.bias", "b.weight")]
    scale = 0.05 / np.sqrt(sum(float((g * g).sum()) for g in others))
    np.testing.assert_allclose(obs.initial["a.weight"] - step.values["a.weight"], 0.1 * scale * step.grads["a.weight"],
                               rtol=1e-4, atol=1e-7)


def test_float32_residual_is_not_semantic():
    """clip-before-l2[adamw]: the oracle's rule (clip to the global norm, then decoupled decay and an
    uncorrected Adam step) applied to MindSpore's own gradients gives MindSpore's values at each step to
    float32 rounding; the 2.3e-5 left against the oracle comes from the gradients of weights that
    differ by float32 rounding, amplified where a gradient changes sign under an uncorrected m / sqrt(v)."""
    obs = observe(MindSporeRunner(), SPEC["clip-before-l2[adamw]"].case)
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


# ---------------------------------------------------------------- conv2d, embedding, dropout
def test_conv_is_faithful_and_keeps_the_oihw_layout():
    """conv-bn-running-stats: nn.Conv2d(pad_mode='pad', padding=1, has_bias=False), nn.BatchNorm2d and
    nn.Flatten() before nn.Dense, by hand, give the adapter's losses, gradients and statistics bit for
    bit; the conv weight is exchanged as MindSpore holds it (out, in, kh, kw), with no transpose."""
    case = SPEC["conv-bn-running-stats"].case
    runner = MindSporeRunner()
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
    load(net.fc, init, "fc")
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
    assert record("conv-bn-running-stats").verdict == "conform"


def test_embedding_padding_row_gets_a_gradient():
    """embedding-padding-row[sgd] through the adapter: the table's gradient comes back dense, zero in rows
    not looked up and not in the padding row, which trains; the suite documents the divergence with
    padding-row-gets-gradient alone (confirm/padding_row_gets_gradient.py shows it in plain code)."""
    case = SPEC["embedding-padding-row[sgd]"].case
    obs = observe(MindSporeRunner(), case)
    x, _ = batch(case, 0, ["emb", "out"])
    grad = obs.steps[0].grads["emb.weight"]
    assert x[0] == 0 and np.abs(grad[0]).max() > 0
    assert not np.any(grad[[r for r in range(10) if r not in set(x.tolist())]])
    assert np.abs(obs.steps[-1].values["emb.weight"][0] - obs.initial["emb.weight"][0]).max() > 0
    result = record("embedding-padding-row[sgd]")
    assert result.verdict == "divergence" and result.documented
    assert [v.name for v in result.documented.variants] == ["padding-row-gets-gradient"]


def test_dropout_is_the_identity_in_eval_only():
    """nn.Dropout(p=0.5) through the adapter: eval forward equals the model without it, a train
    forward of the same batch differs; held in a plain list, net.set_train() does not reach it and it
    stays the identity (plain-contained-layers-stay-eval)."""
    case = SPEC["dropout-on-in-train"].case
    runner = MindSporeRunner()
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


# ---------------------------------------------------------------- cross-entropy, a bias left out, a positional rate
@pytest.mark.parametrize("instance, built", [
    ("ce-defaults[sgd]", lambda: nn.CrossEntropyLoss()),  # every setting left out; sample 0 labelled -100
    ("ce-label-smoothing-ignore[sgd]",
     lambda: nn.CrossEntropyLoss(ignore_index=0, reduction="mean", label_smoothing=0.1)),
    ("ce-ignore-index-sum", lambda: nn.CrossEntropyLoss(ignore_index=0, reduction="sum", label_smoothing=0.0)),
])
def test_cross_entropy_is_the_users_loss_object(instance, built):
    """A case's cross_entropy through the adapter equals nn.CrossEntropyLoss built by hand with the settings the
    case writes out (the "default" ones left out), on int32 labels, in the tutorials' forward_fn, bit for bit."""
    case = SPEC[instance].case
    obs = observe(MindSporeRunner(), case)
    net = dense_net(case, "a", "b")
    opt = nn.SGD(net.trainable_params(), learning_rate=case.optimizer.lr, weight_decay=case.optimizer.weight_decay)
    loss_fn = built()
    grad_fn = ms.value_and_grad(lambda x, t: loss_fn(net.b(net.a(x)), t), None, opt.parameters)
    net.set_train()
    for index in range(sum(step.repeat for step in case.steps)):
        x, t = batch(case, index, ["a", "b"])
        assert t.dtype == np.int64 and (t[0] == case.cross_entropy.ignored_label())
        loss, grads = grad_fn(Tensor(x), Tensor(t.astype(np.int32)))
        opt(grads)
        assert obs.steps[index].loss == float(loss.asnumpy())
        np.testing.assert_array_equal(obs.steps[index].values["a.weight"], net.a.weight.asnumpy().T)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_trainer_takes_the_users_cross_entropy(mode):
    """api trainer: the loss Model.train is handed is the case's nn.CrossEntropyLoss; the adapter's
    TrainOneStepCell steps equal Model.train on one-batch datasets of int32 labels, bit for bit."""
    from mindspore import Model
    from mindspore import dataset as ds
    case = SPEC["ce-label-smoothing-ignore[sgd]"].case
    obs = observe(MindSporeRunner(mode=mode, api="trainer"), case)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.a, self.b = dense(case, "a"), dense(case, "b")

        def construct(self, x):
            return self.b(self.a(x))
    net = Net()
    model = Model(net, nn.CrossEntropyLoss(ignore_index=0, reduction="mean", label_smoothing=0.1),
                  nn.SGD(net.trainable_params(), learning_rate=0.1))
    for index in range(2):
        x, t = batch(case, index, ["a", "b"])
        model.train(1, ds.NumpySlicesDataset({"x": x, "t": t.astype(np.int32)}, shuffle=False).batch(len(x)),
                    dataset_sink_mode=False)
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], net.a.weight.asnumpy().T)
    assert not np.array_equal(obs.steps[-1].values["a.weight"], obs.initial["a.weight"])


def test_bias_left_out_and_positional_rate_are_what_mindspore_builds():
    """bias: default leaves has_bias out: nn.Conv2d then has none (a zero bias with no gradient, out of the
    optimizer), nn.Dense has one; a positional rate is nn.Dropout(rate), whose first parameter is keep_prob,
    and the rate reported is measured on the built Cell, which is left in its mode."""
    runner = MindSporeRunner()
    obs = observe(runner, SPEC["default-conv-bias[sgd]"].case)
    assert runner.layers["conv"].bias is None and obs.defaults == {"conv.bias": False}
    assert "conv.bias" not in obs.optimizer_params and not obs.trainable["conv.bias"]
    assert all(s.grads["conv.bias"] is None and not np.any(s.values["conv.bias"]) for s in obs.steps)
    assert observe(MindSporeRunner(), SPEC["default-linear-bias"].case).defaults == {"a.bias": True}
    case = SPEC["dropout-rate-positional[rate-0.1]"].case
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    drop = runner.layers["drop"]
    assert isinstance(drop, nn.Dropout) and drop.keep_prob == pytest.approx(0.1)
    assert runner.defaults()["drop.rate"] == pytest.approx(0.9, abs=0.01) and not drop.training
