"""The adapter is the flax/optax code a user writes: per concept, its run of a case equals the same
schedule written by hand (an nnx.Module, nnx.value_and_grad, nnx.Optimizer over an optax transformation)."""
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from conformance.engine.scenario import batch, initial_values, observe
from conformance.spec import schedule
from conformance.runners.jax.runner import JaxRunner

from .common import SPEC, Net, inputs, value


def _train(case, model, optimizer, paths):
    losses = []
    for index, path in enumerate(paths):
        x, t = inputs(case, index, path)

        def loss_fn(m):
            y = x
            for name in path:
                y = getattr(m, name)(y)
            return jnp.mean((y - t) ** 2)
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        losses.append(float(loss))
    return losses


@pytest.mark.parametrize("name, tx", [
    ("sgd", lambda: optax.chain(optax.add_decayed_weights(0.0005), optax.sgd(0.1))),
    ("momentum", lambda: optax.chain(optax.add_decayed_weights(0.0005), optax.sgd(0.1, momentum=0.9))),
    ("adamw", lambda: optax.adamw(0.1, weight_decay=0.0005)),
])
def test_seed_1_through_the_adapter_is_plain_flax_code(name, tx):
    """seed-1 (the second step leaves the first layer out): coupled L2 is chain(add_decayed_weights, sgd),
    AdamW is optax.adamw; the adapter's values and losses equal the hand-written loop's."""
    case = SPEC[f"seed-1-decay-moves-unused-layer[{name}]"].case
    assert case.optimizer.weight_decay == 0.0005 and case.optimizer.lr == 0.1
    obs = observe(JaxRunner(), case)
    model = Net(case, "first", "second")
    losses = _train(case, model, nnx.Optimizer(model, tx(), wrt=nnx.Param), [s.path for s in case.steps])
    assert [s.loss for s in obs.steps] == pytest.approx(losses, rel=1e-6)
    np.testing.assert_allclose(obs.steps[-1].values["first.weight"], value(model.first.kernel), rtol=1e-6)
    np.testing.assert_allclose(obs.steps[-1].values["second.weight"], value(model.second.kernel), rtol=1e-6)


def test_accumulation_adds_the_returned_states():
    """two-backward-accumulate: no clearing between two backward passes is the sum of the two gradient
    States (jax.tree.map(jnp.add, ...)), applied once."""
    case = SPEC["two-backward-accumulate"].case
    obs = observe(JaxRunner(), case)
    model = Net(case, "a", "b")
    optimizer = nnx.Optimizer(model, optax.sgd(case.optimizer.lr), wrt=nnx.Param)
    total = None
    for index in range(2):
        x, t = inputs(case, index, ["a", "b"])
        _, grads = nnx.value_and_grad(lambda m: jnp.mean((m.b(m.a(x)) - t) ** 2))(model)
        total = grads if total is None else jax.tree.map(jnp.add, total, grads)
    optimizer.update(model, total)
    np.testing.assert_allclose(obs.steps[1].grads["a.weight"], value(total["a"]["kernel"]), rtol=1e-6)
    np.testing.assert_allclose(obs.steps[1].values["a.weight"], value(model.a.kernel), rtol=1e-6)


def test_unused_layer_gets_zeros_not_none():
    """never-used-param-grad: jax.grad returns zeros for a layer that is never on the path."""
    obs = observe(JaxRunner(), SPEC["never-used-param-grad[default]"].case)
    grad = obs.steps[0].grads["spare.weight"]
    assert grad is not None and not np.any(grad)


def test_frozen_layer_is_left_out_of_gradient_and_optimizer():
    """frozen-param-no-grad: the frozen parameter is outside the wrt filter, so it has no gradient entry
    and the optimizer does not hold it."""
    runner = JaxRunner()
    case = SPEC["freeze-layer-or-params[layer]"].case
    obs = observe(runner, case)
    assert obs.steps[0].grads["a.weight"] is None and "a.weight" not in obs.optimizer_params
    assert not obs.trainable["a.weight"] and obs.trainable["b.weight"]


def test_frozen_parameter_handed_to_the_optimizer_is_frozen_the_optax_way():
    """decay-skips-frozen-param: the optimizer holds the frozen a.weight, so it gets its gradient, and
    optax.multi_transform hands it to set_to_zero: it stays put, as the hand-written loop shows."""
    case = SPEC["decay-skips-frozen-param[adamw,default]"].case
    obs = observe(JaxRunner(), case)
    assert obs.optimizer_params.count("a.weight") == 1 and not obs.trainable["a.weight"]
    assert np.abs(obs.steps[0].grads["a.weight"]).max() > 0  # a gradient, unlike the reference's None
    model = Net(case, "a", "b")

    def labels(tree):
        return jax.tree_util.tree_map_with_path(
            lambda path, _: "frozen" if path[0].key == "a" and path[1].key == "kernel" else "trainable", tree)
    opt = case.optimizer
    tx = optax.multi_transform({"trainable": optax.adamw(opt.lr, weight_decay=opt.weight_decay),
                                "frozen": optax.set_to_zero()}, labels)
    losses = _train(case, model, nnx.Optimizer(model, tx, wrt=nnx.Param), [s.path for s in case.steps] * 3)
    assert [s.loss for s in obs.steps] == pytest.approx(losses, rel=1e-6)
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], obs.steps[0].values["a.weight"])
    np.testing.assert_allclose(obs.steps[-1].values["b.weight"], value(model.b.kernel), rtol=1e-6)


def test_batchnorm_is_nnx_batchnorm_with_flax_momentum():
    """bn-custom-momentum-eps: neutral momentum 0.3 / eps 1e-3 is nnx.BatchNorm(momentum=0.7, epsilon=1e-3)
    (flax weighs the old statistic), its running mean tracked by hand."""
    case = SPEC["bn-custom-momentum-eps"].case
    runner = JaxRunner()
    obs = observe(runner, case)
    assert runner.layers["bn"].momentum == pytest.approx(0.7) and runner.layers["bn"].epsilon == 1e-3
    init = initial_values(case)
    bn = nnx.BatchNorm(3, momentum=0.7, epsilon=1e-3, rngs=nnx.Rngs(0))
    for role, attr in (("weight", "scale"), ("bias", "bias"), ("running_mean", "mean"), ("running_var", "var")):
        getattr(bn, attr).set_value(jnp.asarray(init[f"bn.{role}"], jnp.float32))
    model = Net(case, "a", "b")
    model.bn = bn
    optimizer = nnx.Optimizer(model, optax.sgd(case.optimizer.lr), wrt=nnx.Param)
    model.train()
    for index in range(3):
        x, t = inputs(case, index, ["a", "bn", "b"])
        _, grads = nnx.value_and_grad(lambda m: jnp.mean((m.b(m.bn(m.a(x))) - t) ** 2))(model)
        optimizer.update(model, grads)
    np.testing.assert_allclose(obs.steps[-1].values["bn.running_mean"], value(model.bn.mean), rtol=1e-5)
    np.testing.assert_allclose(obs.steps[-1].values["a.weight"], value(model.a.kernel), rtol=1e-5)


def test_conv_layout_is_channels_last():
    """conv-grad: the canonical NCHW batch and OIHW kernel are what nnx.Conv takes as NHWC / HWIO."""
    case = SPEC["conv-grad"].case
    runner = JaxRunner()
    obs = observe(runner, case)
    conv = next(n for n, s in case.model.layers.items() if s.conv2d)
    kernel = runner.variables[f"{conv}.weight"]
    assert kernel[...].shape[:2] == (case.model.layers[conv].conv2d[2],) * 2  # HWIO
    assert obs.steps[0].grads[f"{conv}.weight"].shape == initial_values(case)[f"{conv}.weight"].shape  # OIHW back


def test_defaults_are_the_factories_and_the_layers():
    """default-adamw-weight-decay / default-layernorm-eps: what optax.adamw and nnx.LayerNorm take when left out."""
    obs = observe(JaxRunner(), SPEC["default-adamw-weight-decay"].case)
    assert obs.defaults["optimizer.weight_decay"] == inspect.signature(optax.adamw).parameters["weight_decay"].default
    obs = observe(JaxRunner(), SPEC["default-layernorm-eps"].case)
    assert obs.defaults["ln.eps"] == nnx.LayerNorm(3, rngs=nnx.Rngs(0)).epsilon == 1e-6


def test_bias_and_positional_rate_are_read_from_the_built_layers():
    """default-linear-bias: nnx.Linear built without use_bias holds one; dropout-rate-positional: nnx.Dropout(0.5)
    zeroes half of DROPOUT_PROBE ones in train mode (measured)."""
    assert observe(JaxRunner(), SPEC["default-linear-bias"].case).defaults == {"a.bias": True}
    rate = observe(JaxRunner(), SPEC["dropout-rate-positional[rate-0.5]"].case).defaults["drop.rate"]
    assert rate == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize("instance", ["ce-settings-written-out[sgd]", "ce-reduction-sum[adam]", "ce-label-smoothing[sgd]"])
def test_cross_entropy_is_optax_on_integer_labels(instance):
    """A cross-entropy is optax.softmax_cross_entropy_with_integer_labels(logits, labels) reduced by .mean() / .sum(),
    or with label smoothing optax.smooth_labels(one_hot(labels), s) into optax.softmax_cross_entropy."""
    case = SPEC[instance].case
    ce, opt = case.cross_entropy, case.optimizer
    obs = observe(JaxRunner(), case)
    model = Net(case, "a", "b")
    inner = optax.adam(opt.lr) if opt.name == "adam" else optax.sgd(opt.lr)
    tx = optax.chain(optax.add_decayed_weights(opt.weight_decay), inner) if opt.weight_decay else inner
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    losses = []
    for index, step in enumerate(schedule(case)):
        x, labels = batch(case, index, step.path)

        def loss_fn(m):
            logits = m.b(m.a(jnp.asarray(x)))
            if ce.label_smoothing:
                smoothed = optax.smooth_labels(jax.nn.one_hot(labels, logits.shape[-1]), ce.label_smoothing)
                per_sample = optax.softmax_cross_entropy(logits, smoothed)
            else:
                per_sample = optax.softmax_cross_entropy_with_integer_labels(logits, jnp.asarray(labels))
            return per_sample.mean() if ce.reduction == "mean" else per_sample.sum()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        losses.append(float(loss))
    assert [s.loss for s in obs.steps] == pytest.approx(losses, rel=1e-6)
    np.testing.assert_allclose(obs.steps[-1].values["a.weight"], value(model.a.kernel), rtol=1e-5, atol=1e-7)


def test_lr_change_is_inject_hyperparams():
    """lr-change: the optimizer is optax.inject_hyperparams(...)(learning_rate=lr), and a new rate is set in
    opt_state.hyperparams, as optax documents it."""
    runner = JaxRunner()
    case = SPEC["lr-change[sgd]"].case
    observe(runner, case)
    new = [s.lr for s in case.steps if s.lr is not None][-1]
    assert float(runner.opt.opt_state.hyperparams["learning_rate"][...]) == pytest.approx(new)


def test_all_state_is_param_and_batchstat_differentiated():
    """bn-stats-fixed-in-eval-with-decay (params all): nnx.Optimizer over nnx.Any(nnx.Param, nnx.BatchStat),
    the gradient over the same filter; an eval step moves the running mean as the hand-written loop does."""
    case = SPEC["bn-stats-fixed-in-eval-with-decay[sgd]"].case
    runner = JaxRunner()
    obs = observe(runner, case)
    assert {"bn.running_mean", "bn.running_var"} <= set(obs.optimizer_params)
    init = initial_values(case)
    names = [n for n, s in case.model.layers.items() if s.linear]
    model = Net(case, *names)
    bn = nnx.BatchNorm(case.model.layers["bn"].batchnorm, momentum=1 - case.model.layers["bn"].momentum,
                       epsilon=case.model.layers["bn"].eps, rngs=nnx.Rngs(0))
    for role, attr in (("weight", "scale"), ("bias", "bias"), ("running_mean", "mean"), ("running_var", "var")):
        getattr(bn, attr).set_value(jnp.asarray(init[f"bn.{role}"], jnp.float32))
    model.bn = bn
    every = nnx.Any(nnx.Param, nnx.BatchStat)
    opt = case.optimizer
    optimizer = nnx.Optimizer(model, optax.chain(optax.add_decayed_weights(opt.weight_decay), optax.sgd(opt.lr)),
                              wrt=every)
    for index, step in enumerate(s for s in case.steps for _ in range(s.repeat)):
        model.train() if step.train else model.eval()
        x, t = inputs(case, index, step.path)

        def loss_fn(m):
            y = x
            for name in step.path:
                y = getattr(m, name)(y)
            return jnp.mean((y - t) ** 2)
        optimizer.update(model, nnx.grad(loss_fn, argnums=nnx.DiffState(0, every))(model))
    np.testing.assert_allclose(obs.steps[-1].values["bn.running_mean"], value(model.bn.mean), rtol=1e-5, atol=1e-7)
