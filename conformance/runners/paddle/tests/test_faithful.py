"""The paddle adapter's eager loop equals the same case written by hand in Paddle, per layer kind
(Linear, BatchNorm1D/2D, Conv2D, Embedding, Dropout, LayerNorm) and per optimizer feature (defaults,
no_decay, per-variable clipping, set_lr, layer-level freezing); and the Paddle facts the adapter relies
on that no confirm/ snippet shows."""
import inspect

import numpy as np
import pytest

from conformance.engine.scenario import batch, initial_values, observe
from conformance.runners.paddle.graph import StaticRunner
from conformance.runners.paddle.runner import PaddleRunner
from conformance.spec import FEATURES

from .common import SPEC, paddle, record, started


def _set(layer, init, name):
    layer.weight.set_value(init[f"{name}.weight"])  # Paddle stores a Linear's weight (in, out): no transpose
    layer.bias.set_value(init[f"{name}.bias"])


def _linear_pair(case):
    init = initial_values(case)
    a, b = paddle.nn.Linear(4, 3), paddle.nn.Linear(3, 2)
    _set(a, init, "a")
    _set(b, init, "b")
    return a, b


def _train(case, a, b, opt, steps):
    for index in range(steps):
        opt.clear_grad()
        x, t = batch(case, index, ["a", "b"])
        ((b(a(paddle.to_tensor(x))) - paddle.to_tensor(t)) ** 2).mean().backward()
        opt.step()


# ---------------------------------------------------------------- layer kinds
def test_linear_loop_is_faithful():
    """seed-1 through the adapter equals the same schedule written by hand: Momentum with L2 decay, the
    second step's path leaves `first` out, opt.clear_grad() before each step."""
    case = SPEC["seed-1-decay-moves-unused-layer[momentum]"].case
    obs = observe(PaddleRunner(), case)
    init = initial_values(case)
    first, second = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
    _set(first, init, "first")
    _set(second, init, "second")
    opt = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9, weight_decay=0.0005,
                                    parameters=first.parameters() + second.parameters())
    for index, path in enumerate([[first, second], [second]]):
        opt.clear_grad()
        x, t = batch(case, index, case.steps[index].path)
        y = paddle.to_tensor(x)
        for layer in path:
            y = layer(y)
        ((y - paddle.to_tensor(t)) ** 2).mean().backward()
        opt.step()
    np.testing.assert_array_equal(obs.steps[-1].values["first.weight"], first.weight.numpy())
    np.testing.assert_array_equal(obs.steps[-1].values["second.weight"], second.weight.numpy())


def test_batchnorm_is_faithful():
    """bn-custom-momentum-eps: the neutral momentum 0.3 / eps 1e-3 is BatchNorm1D(momentum=0.7, epsilon=1e-3)."""
    case = SPEC["bn-custom-momentum-eps"].case
    obs = observe(PaddleRunner(), case)
    init = initial_values(case)
    a, bn, b = paddle.nn.Linear(4, 3), paddle.nn.BatchNorm1D(3, momentum=0.7, epsilon=1e-3), paddle.nn.Linear(3, 2)
    for layer, name in ((a, "a"), (bn, "bn"), (b, "b")):
        _set(layer, init, name)
    bn._mean.set_value(init["bn.running_mean"])
    bn._variance.set_value(init["bn.running_var"])
    opt = paddle.optimizer.SGD(0.1, parameters=a.parameters() + bn.parameters() + b.parameters())
    for index in range(3):
        opt.clear_grad()
        x, t = batch(case, index, ["a", "bn", "b"])
        loss = ((b(bn(a(paddle.to_tensor(x)))) - paddle.to_tensor(t)) ** 2).mean()
        loss.backward()
        opt.step()
        assert obs.steps[index].loss == float(loss.item())
    np.testing.assert_array_equal(obs.steps[-1].values["bn.running_var"], bn._variance.numpy())
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], a.weight.numpy())


def test_conv_is_faithful():
    """conv-bn-running-stats: Conv2D(padding=k // 2, bias_attr=False), BatchNorm2D, paddle.flatten(x, 1),
    Linear, as written by hand; the weight is OIHW both ways."""
    case = SPEC["conv-bn-running-stats"].case
    runner = PaddleRunner()
    obs = observe(runner, case)
    assert type(runner.layers["bn"]) is paddle.nn.BatchNorm2D and runner.layers["c"].bias is None
    init = initial_values(case)
    assert init["c.weight"].shape == (3, 2, 3, 3)
    np.testing.assert_array_equal(obs.initial["c.weight"], init["c.weight"])  # the layout round-trips
    conv, bn, fc = paddle.nn.Conv2D(2, 3, 3, padding=1, bias_attr=False), paddle.nn.BatchNorm2D(3), paddle.nn.Linear(48, 2)
    conv.weight.set_value(init["c.weight"])
    _set(bn, init, "bn")
    bn._mean.set_value(init["bn.running_mean"])
    bn._variance.set_value(init["bn.running_var"])
    _set(fc, init, "fc")
    opt = paddle.optimizer.SGD(0.1, parameters=conv.parameters() + bn.parameters() + fc.parameters())
    for index in range(2):
        opt.clear_grad()
        x, t = batch(case, index, ["c", "bn", "fc"])
        loss = ((fc(paddle.flatten(bn(conv(paddle.to_tensor(x))), 1)) - paddle.to_tensor(t)) ** 2).mean()
        loss.backward()
        if index == 0:
            np.testing.assert_array_equal(obs.steps[0].grads["c.weight"], conv.weight.grad.numpy())
        opt.step()
        assert obs.steps[index].loss == float(loss.item())
    np.testing.assert_array_equal(obs.steps[-1].values["c.weight"], conv.weight.numpy())
    np.testing.assert_array_equal(obs.steps[-1].values["bn.running_mean"], bn._mean.numpy())


def test_batchnorm_kind_follows_its_input():
    """BatchNorm2D after a conv, BatchNorm1D on features (BatchNorm2D refuses a 2-D input)."""
    runner, _ = started(PaddleRunner(), "seed-2-conv-blocks-in-plain-list[framework_list]")
    assert type(runner.layers["block_bn"]) is paddle.nn.BatchNorm2D
    runner, _ = started(PaddleRunner(), "bn-custom-momentum-eps")
    assert type(runner.layers["bn"]) is paddle.nn.BatchNorm1D
    with pytest.raises(ValueError):
        paddle.nn.BatchNorm2D(3)(paddle.ones([4, 3]))


def test_embedding_grad_is_dense_and_padding_row_gets_none():
    """Embedding's default constructor (sparse=False), as the adapter builds it: a dense gradient, zero
    on the padding row and on the rows not looked up."""
    assert paddle.nn.Embedding(5, 3)._sparse is False
    runner, case = started(PaddleRunner(), "embedding-padding-row[sgd]")
    x, t = batch(case, 0, ["emb", "out"])
    runner.forward(["emb", "out"], x, t, train=True, backward=True)
    grad = runner.grads()["emb.weight"]
    assert grad.shape == (10, 4)
    np.testing.assert_array_equal(grad[0], 0.0)  # the padding row
    unused = sorted(set(range(10)) - set(x.tolist()))
    assert unused and not grad[unused].any()  # rows not looked up: zero, reported dense
    assert all(grad[r].any() for r in set(x.tolist()) - {0})


def test_dropout_scales_as_the_reference():
    """paddle.nn.Dropout's default mode scales the kept units by 1 / (1 - p) in train mode, the
    reference's dropout; the adapter builds it with p alone."""
    assert paddle.nn.Dropout(p=0.5).mode == "upscale_in_train"


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_dropout_is_the_identity_in_eval_only(mode):
    runner, case = started(PaddleRunner(mode=mode), "dropout-on-in-train")
    x, t = batch(case, 0, ["a", "drop", "b"])
    evals = {runner.forward(["a", "drop", "b"], x, t, train=False, backward=False) for _ in range(2)}
    trains = {runner.forward(["a", "drop", "b"], x, t, train=True, backward=False) for _ in range(3)}
    assert len(evals) == 1 and evals.isdisjoint(trains)


@pytest.mark.parametrize("instance_id, written", [
    ("ce-settings-written-out[sgd]", {"reduction": "mean", "use_softmax": True, "label_smoothing": 0.0}),
    ("ce-defaults[sgd]", {}),
    ("ce-label-smoothing-ignore[sgd]", {"reduction": "mean", "use_softmax": True, "ignore_index": 0,
                                        "label_smoothing": 0.1})])
def test_cross_entropy_is_paddles(instance_id, written):
    """The case's cross-entropy through the adapter equals paddle.nn.CrossEntropyLoss written by hand with the
    settings the case writes out (from_logits is use_softmax) and nothing else, on the int64 labels."""
    case = SPEC[instance_id].case
    obs = observe(PaddleRunner(), case)
    a, b = paddle.nn.Linear(4, 5), paddle.nn.Linear(5, 3)
    init = initial_values(case)
    _set(a, init, "a")
    _set(b, init, "b")
    decay = {} if case.optimizer.weight_decay == 0 else {"weight_decay": case.optimizer.weight_decay}
    opt = paddle.optimizer.SGD(case.optimizer.lr, parameters=a.parameters() + b.parameters(), **decay)
    criterion = paddle.nn.CrossEntropyLoss(**written)
    for index, step in enumerate(obs.steps):
        opt.clear_grad()
        x, labels = batch(case, index, ["a", "b"])
        assert labels.dtype == np.int64
        loss = criterion(b(a(paddle.to_tensor(x))), paddle.to_tensor(labels))
        loss.backward()
        assert step.loss == float(loss.item())
        np.testing.assert_array_equal(step.grads["a.weight"], a.weight.grad.numpy())
        opt.step()
    np.testing.assert_array_equal(obs.steps[-1].values["b.weight"], b.weight.numpy())


def test_bias_left_to_default_and_positional_rate_are_read_from_the_built_layers():
    """bias: default leaves bias_attr out (paddle's layers then hold a bias: True); a positional Dropout(0.5)'s
    rate is measured on the built layer (about half of DROPOUT_PROBE ones zeroed), in dygraph and in a Program."""
    for adapter, axes in ((PaddleRunner, {}), (StaticRunner, {"mode": "graph", "backend": "static"})):
        runner, _ = started(adapter(**axes), "default-linear-bias")
        assert runner.defaults() == {"a.bias": True}
        runner, _ = started(adapter(**axes), "dropout-rate-positional[rate-0.5]")
        assert runner.defaults()["drop.rate"] == pytest.approx(0.5, abs=0.01)
    runner, _ = started(PaddleRunner(), "dropout-rate-positional[rate-0.1]")
    assert runner.layers["drop"].p == 0.1 and runner.defaults()["drop.rate"] == pytest.approx(0.1, abs=0.01)


def test_layer_level_freeze_of_a_batchnorm():
    """frozen-bn-stats-move[layer]: the adapter freezes the layer with requires_grad_(False) (Paddle 3;
    in 2.6 the same loop over its parameters()); its statistics still move, its weight does not."""
    runner, case = started(PaddleRunner(), "frozen-bn-stats-move[layer]")
    assert [p.stop_gradient for p in runner.layers["bn"].parameters()] == [True, True, True, True]
    obs = observe(PaddleRunner(), case)
    assert not obs.trainable["bn.weight"] and not obs.trainable["bn.bias"]
    assert not np.array_equal(obs.steps[0].values["bn.running_mean"], obs.initial["bn.running_mean"])
    np.testing.assert_array_equal(obs.steps[-1].values["bn.weight"], obs.initial["bn.weight"])
    assert record("frozen-bn-stats-move[layer]").verdict == "conform"


# ---------------------------------------------------------------- optimizer features
OPTIMIZERS = {"sgd": paddle.optimizer.SGD, "momentum": paddle.optimizer.Momentum,
              "adam": paddle.optimizer.Adam, "adamw": paddle.optimizer.AdamW}
PADDLE_ARG = {"lr": "learning_rate", "weight_decay": "weight_decay", "momentum": "momentum", "eps": "epsilon"}


def _signature_default(cls, arg):
    return inspect.signature(cls.__init__).parameters[arg].default


def test_features_are_the_engines_names():
    assert PaddleRunner.features <= set(FEATURES) and "layernorm" in PaddleRunner.features


@pytest.mark.parametrize("instance_id", sorted(i for i in SPEC if i.startswith("default-")))
def test_defaults_read_back_are_the_constructors(instance_id):
    """Every setting a case leaves to default reads back as the default of Paddle's constructor
    signature (an independent source: the adapter reads the built objects), in the spec's convention."""
    case = SPEC[instance_id].case
    obs = observe(PaddleRunner(), case)
    assert obs.defaults, "the case leaves something to default"
    for name, got in obs.defaults.items():
        owner, field = name.split(".")
        if owner == "optimizer":
            cls = OPTIMIZERS[case.optimizer.name]
            if field == "betas":
                want = [_signature_default(cls, "beta1"), _signature_default(cls, "beta2")]
            else:
                want = _signature_default(cls, PADDLE_ARG[field])
                want = 0.0 if want is None else want  # weight_decay=None: no regularizer
        elif field == "padding":  # pixels per side, measured on an image
            want = _signature_default(paddle.nn.Conv2D, "padding")
        elif field == "bias":  # bias_attr=None makes a bias, bias_attr=False none
            layer = case.model.layers[owner]
            want = _signature_default(paddle.nn.Linear if layer.linear else paddle.nn.Conv2D, "bias_attr") is not False
        elif case.model.layers[owner].batchnorm:
            want = _signature_default(paddle.nn.BatchNorm1D, "momentum" if field == "momentum" else "epsilon")
            want = 1.0 - want if field == "momentum" else want  # the new batch's weight
        else:
            want = _signature_default(paddle.nn.LayerNorm, "epsilon")
        assert got == pytest.approx(want, rel=1e-7), name


def test_default_momentum_is_left_out_of_the_constructor():
    """default-momentum through the adapter equals Momentum(learning_rate=0.1) written without momentum
    (0.9 in Paddle: momentum-default-0.9), and the case diverges from the reference's 0."""
    case = SPEC["default-momentum"].case
    obs = observe(PaddleRunner(), case)
    assert obs.defaults == {"optimizer.momentum": pytest.approx(0.9)}
    a, b = _linear_pair(case)
    opt = paddle.optimizer.Momentum(learning_rate=0.1, parameters=a.parameters() + b.parameters())
    _train(case, a, b, opt, 3)
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], a.weight.numpy())
    assert record("default-momentum").verdict == "divergence"


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_no_decay_is_paddles_own_way(optimizer):
    """no-decay-biases: parameter groups with weight_decay 0 (SGD), apply_decay_param_fun (AdamW), each
    equal to the hand-written code, and different from decaying the biases (the exclusion acts)."""
    case = SPEC[f"no-decay-biases[{optimizer}]"].case
    obs = observe(PaddleRunner(), case)
    biases_after = {}
    for exclude in (True, False):
        a, b = _linear_pair(case)
        biases, weights = [a.bias, b.bias], [a.weight, b.weight]
        if optimizer == "sgd":
            params = [{"params": weights}, {"params": biases, "weight_decay": 0.0}] if exclude else weights + biases
            opt = paddle.optimizer.SGD(0.1, parameters=params, weight_decay=0.1)
        else:
            names = {p.name for p in biases}
            opt = paddle.optimizer.AdamW(0.1, parameters=weights + biases, weight_decay=0.1,
                                         apply_decay_param_fun=(lambda n: n not in names) if exclude else None)
        _train(case, a, b, opt, 2)
        biases_after[exclude] = b.bias.numpy()
    np.testing.assert_array_equal(obs.steps[-1].values["b.bias"], biases_after[True])
    assert not np.allclose(biases_after[True], biases_after[False])
    assert record(f"no-decay-biases[{optimizer}]").verdict == "conform"


def test_clip_norm_and_need_clip_are_paddles():
    """clip-excluded-param[per_variable]: ClipGradByNorm with ParamAttr(need_clip=False) on b.bias,
    equal to the hand-written code; without need_clip=False b.bias would be clipped."""
    case = SPEC["clip-excluded-param[per_variable]"].case
    obs = observe(PaddleRunner(), case)
    after = {}
    for need_clip in (False, True):
        init = initial_values(case)
        a = paddle.nn.Linear(4, 3)
        b = paddle.nn.Linear(3, 2, bias_attr=paddle.ParamAttr(need_clip=need_clip))
        _set(a, init, "a")
        _set(b, init, "b")
        opt = paddle.optimizer.SGD(0.1, parameters=a.parameters() + b.parameters(),
                                   grad_clip=paddle.nn.ClipGradByNorm(clip_norm=0.05))
        _train(case, a, b, opt, 2)
        after[need_clip] = (a.weight.numpy(), b.bias.numpy())
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], after[False][0])
    np.testing.assert_array_equal(obs.steps[-1].values["b.bias"], after[False][1])
    assert not np.allclose(after[False][1], after[True][1])


def test_set_lr_is_paddles():
    """lr-change[momentum]: opt.set_lr between steps, equal to the hand-written code."""
    case = SPEC["lr-change[momentum]"].case
    obs = observe(PaddleRunner(), case)
    a, b = _linear_pair(case)
    opt = paddle.optimizer.Momentum(0.1, momentum=0.9, weight_decay=0.05, parameters=a.parameters() + b.parameters())
    for index, lr in enumerate([None, 0.02, 0.3]):
        if lr is not None:
            opt.set_lr(lr)
        opt.clear_grad()
        x, t = batch(case, index, ["a", "b"])
        ((b(a(paddle.to_tensor(x))) - paddle.to_tensor(t)) ** 2).mean().backward()
        opt.step()
        np.testing.assert_array_equal(obs.steps[index].values["a.weight"], a.weight.numpy())
    assert record("lr-change[momentum]").verdict == "conform"


# ---------------------------------------------------------------- Paddle facts the adapter relies on
def test_trainable_and_stop_gradient_are_one_flag():
    """The adapter freezes with stop_gradient=True and reports `trainable`: one flag, two sides."""
    lin = paddle.nn.Linear(2, 2)
    lin.weight.stop_gradient = True
    assert lin.weight.trainable is False
    lin.weight.trainable = True
    assert lin.weight.stop_gradient is False


def test_l2decay_gradient_is_coeff_times_weight():
    """A float weight_decay is L2Decay(coeff), whose gradient is coeff * w (the documented loss is
    0.5 * coeff * sum(w ** 2)): the reference's coupled decay, unscaled."""
    lin = paddle.nn.Linear(3, 2, bias_attr=False)
    w = lin.weight.numpy().astype(np.float64)
    opt = paddle.optimizer.SGD(1.0, parameters=lin.parameters(), weight_decay=paddle.regularizer.L2Decay(0.3))
    (lin(paddle.zeros([1, 3])).sum() * 0).backward()  # a zero gradient: the step is decay alone
    opt.step()
    np.testing.assert_allclose(lin.weight.numpy(), w - 0.3 * w, rtol=1e-6)


def test_minimize_takes_no_parameter_groups():
    """Why the static program and hapi's trainer refuse no_decay outside AdamW (expected.yaml):
    minimize() rejects the parameter groups the dygraph loop uses."""
    lin = paddle.nn.Linear(3, 2)
    opt = paddle.optimizer.SGD(0.1, parameters=[{"params": [lin.weight]}, {"params": [lin.bias], "weight_decay": 0.0}],
                               weight_decay=0.1)
    loss = lin(paddle.ones([4, 3])).mean()
    loss.backward()
    with pytest.raises((TypeError, ValueError), match="must be list of Tensor, but got dict"):  # 3.x / 2.6
        opt.minimize(loss)
