"""The adapter is the torch code a user writes: per layer kind and optimizer feature, its eager run
equals the same schedule written by hand in torch, and it builds torch's own modules."""
import inspect

import numpy as np
import pytest
import torch

from conformance.engine.scenario import batch, initial_values, observe
from conformance.runners.torch.runner import TorchRunner

from .common import SPEC, assert_adapter_equals, hand_written


# ---------------------------------------------------------------- settings left to torch's defaults
@pytest.mark.parametrize("instance_id, cls", [("default-adamw-step", torch.optim.AdamW),
                                              ("default-momentum", torch.optim.SGD)])
def test_default_settings_are_left_out_and_read_back(instance_id, cls):
    """Left-out settings: the adapter reports torch's constructor defaults (its signature), and
    trains exactly as an optimizer built without them."""
    case = SPEC[instance_id].case
    obs = observe(TorchRunner(), case)
    signature = inspect.signature(cls).parameters
    assert obs.defaults and all(
        value == pytest.approx(signature[name.split(".")[1]].default) for name, value in obs.defaults.items())
    given = {"lr": case.optimizer.lr} if case.optimizer.lr != "default" else {}
    assert_adapter_equals(instance_id, hand_written(
        instance_id, lambda layers: cls([p for layer in layers.values() for p in layer.parameters()], **given)))


def test_default_norm_layers_read_back():
    momentum = observe(TorchRunner(), SPEC["default-bn-momentum"].case).defaults
    bn_eps = observe(TorchRunner(), SPEC["default-bn-eps"].case).defaults
    ln_eps = observe(TorchRunner(), SPEC["default-layernorm-eps"].case).defaults
    assert (momentum, bn_eps, ln_eps) == ({"bn.momentum": torch.nn.BatchNorm1d(1).momentum},
                                          {"bn.eps": torch.nn.BatchNorm1d(1).eps},
                                          {"ln.eps": torch.nn.LayerNorm(1).eps})


@pytest.mark.parametrize("instance_id, criterion", [
    ("ce-defaults[sgd]", torch.nn.CrossEntropyLoss()),
    ("ce-label-smoothing[adam]", torch.nn.CrossEntropyLoss(label_smoothing=0.1)),
    ("ce-ignore-index-sum", torch.nn.CrossEntropyLoss(reduction="sum", ignore_index=0))])
def test_a_cross_entropy_is_torchs_loss_object_as_written(instance_id, criterion):
    case = SPEC[instance_id].case
    opt = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[case.optimizer.name]
    assert_adapter_equals(instance_id, hand_written(instance_id, lambda layers: opt(
        [p for layer in layers.values() for p in layer.parameters()], lr=case.optimizer.lr,
        weight_decay=case.optimizer.weight_decay), criterion=criterion))


def test_a_positional_dropout_rate_is_measured_on_the_built_layer():
    obs = observe(TorchRunner(), SPEC["dropout-rate-positional[rate-0.1]"].case)
    assert abs(obs.defaults["drop.rate"] - 0.1) < 0.01


# ---------------------------------------------------------------- layer kinds
def test_layernorm_is_torchs_with_weight_and_bias():
    runner = TorchRunner()
    observe(runner, SPEC["layernorm-grads"].case)
    ln = runner.layers["ln"]
    assert isinstance(ln, torch.nn.LayerNorm) and ln.normalized_shape == (5,) and ln.eps == 1e-5
    assert runner.tensors["ln.weight"] is ln.weight and runner.tensors["ln.bias"] is ln.bias


def test_conv_layers_are_torchs_in_oihw_and_equal_the_model_by_hand():
    """Conv2d with padding k // 2 takes the canonical (out, in, kh, kw) weight as is; a BatchNorm after
    it is BatchNorm2d; the adapter's run equals conv -> bn -> flatten(1) -> linear written by hand."""
    case = SPEC["conv-bn-running-stats"].case
    runner = TorchRunner()
    obs = observe(runner, case)
    conv, bn = runner.layers["c"], runner.layers["bn"]
    assert isinstance(conv, torch.nn.Conv2d) and conv.padding == (1, 1) and conv.bias is None
    assert isinstance(bn, torch.nn.BatchNorm2d) and isinstance(runner.layers["fc"], torch.nn.Linear)
    init = initial_values(case)
    c, b, f = torch.nn.Conv2d(2, 3, 3, padding=1, bias=False), torch.nn.BatchNorm2d(3), torch.nn.Linear(48, 2)
    with torch.no_grad():
        c.weight.copy_(torch.as_tensor(init["c.weight"]))
        for role in ("weight", "bias", "running_mean", "running_var"):
            getattr(b, role).copy_(torch.as_tensor(init[f"bn.{role}"]))
        f.weight.copy_(torch.as_tensor(init["fc.weight"].T)), f.bias.copy_(torch.as_tensor(init["fc.bias"]))
    opt = torch.optim.SGD([*c.parameters(), *b.parameters(), *f.parameters()], lr=0.1)
    for index in range(2):
        opt.zero_grad()
        x, t = batch(case, index, ["c", "bn", "fc"])
        ((f(b(c(torch.as_tensor(x))).flatten(1)) - torch.as_tensor(t)) ** 2).mean().backward()
        opt.step()
    np.testing.assert_array_equal(obs.steps[-1].values["c.weight"], c.weight.detach().numpy())
    np.testing.assert_array_equal(obs.steps[-1].values["fc.weight"], f.weight.detach().numpy().T)
    np.testing.assert_array_equal(obs.steps[-1].values["bn.running_mean"], b.running_mean.numpy())


def test_embedding_padding_row_gets_a_zero_gradient_and_others_a_dense_one():
    """nn.Embedding(padding_idx=0), dense (sparse=False): the padding row, looked up first in every
    batch, gets a zero gradient; rows not looked up get zeros, looked-up ones do not."""
    case = SPEC["embedding-padding-row[sgd]"].case
    runner = TorchRunner()
    obs = observe(runner, case)
    emb = runner.layers["emb"]
    assert isinstance(emb, torch.nn.Embedding) and emb.padding_idx == 0 and not emb.sparse
    grad = obs.steps[0].grads["emb.weight"]
    rows, _ = batch(case, 0, ["emb", "out"])
    assert rows[0] == 0 and not np.any(grad[0]) and grad.shape == (10, 4)
    assert all(np.any(grad[r]) for r in set(rows) - {0})
    assert not np.any(grad[sorted(set(range(10)) - set(rows))])
    np.testing.assert_array_equal(obs.steps[-1].values["emb.weight"][0], obs.before(0)["emb.weight"][0])


def test_dropout_is_the_identity_in_eval_and_not_in_train():
    case = SPEC["dropout-off-in-eval"].case
    runner = TorchRunner()
    runner.build(case.model, initial_values(case))
    assert isinstance(runner.layers["drop"], torch.nn.Dropout) and runner.layers["drop"].p == 0.5
    x, t = batch(case, 0, ["a", "drop", "b"])
    without = runner.forward(["a", "b"], x, t, train=False, backward=False)  # the same model, no dropout
    assert runner.forward(["a", "drop", "b"], x, t, train=False, backward=False) == without
    assert runner.forward(["a", "drop", "b"], x, t, train=True, backward=False) != without


# ---------------------------------------------------------------- freezing
@pytest.mark.parametrize("instance_id, layer", [("freeze-bn-mid-training", "bn"),
                                                ("frozen-bn-stats-move[layer]", "bn"),
                                                ("freeze-layer-or-params[layer]", "a")])
def test_layer_names_freeze_with_module_requires_grad_(monkeypatch, instance_id, layer):
    """A layer name (at build or between steps) uses the module's own switch; a frozen BatchNorm
    still normalises with the batch and moves its statistics, and gets no gradient."""
    calls = []
    original = torch.nn.Module.requires_grad_
    def recording(module, requires_grad=True):
        calls.append((module, requires_grad))
        return original(module, requires_grad)
    monkeypatch.setattr(torch.nn.Module, "requires_grad_", recording)
    runner = TorchRunner()
    obs = observe(runner, SPEC[instance_id].case)
    assert (runner.layers[layer], False) in calls
    last = obs.steps[-1]
    assert last.grads[f"{layer}.weight"] is None and last.grads[f"{layer}.bias"] is None
    if layer == "bn":
        assert not np.array_equal(last.values["bn.running_mean"], obs.before(len(obs.steps) - 1)["bn.running_mean"])


def test_freeze_then_unfreeze_equals_requires_grad_by_hand():
    def freeze_schedule(index, layers, opt):  # freeze a.weight before step 2, unfreeze it before step 3
        if index in (2, 3):
            layers["a"].weight.requires_grad_(index == 3)
    expected = hand_written("refreeze-keeps-state[adam]", lambda layers: torch.optim.Adam(
        [p for layer in layers.values() for p in layer.parameters()], lr=0.05), freeze_schedule)
    assert_adapter_equals("refreeze-keeps-state[adam]", expected)


# ---------------------------------------------------------------- optimizer features
def test_no_decay_equals_a_parameter_group_without_decay():
    def groups(layers):
        biases = [layers["a"].bias, layers["b"].bias]
        weights = [layers["a"].weight, layers["b"].weight]
        return torch.optim.AdamW([{"params": weights}, {"params": biases, "weight_decay": 0.0}], lr=0.1,
                                 weight_decay=0.1)
    expected = hand_written("no-decay-biases[adamw]", groups)
    assert_adapter_equals("no-decay-biases[adamw]", expected)
    plain = hand_written("no-decay-biases[adamw]", lambda layers: torch.optim.AdamW(
        [p for layer in layers.values() for p in layer.parameters()], lr=0.1, weight_decay=0.1))
    assert not np.array_equal(plain["a.bias"], expected["a.bias"])  # the exclusion shows


@pytest.mark.parametrize("variant", ["global", "per_variable"])
def test_no_clip_and_per_variable_clipping_equal_clip_grad_norm_by_hand(variant):
    instance_id = f"clip-excluded-param[{variant}]"
    def clipping(excluded):
        def clip(layers):
            clipped = [p for layer in layers.values() for p in layer.parameters() if all(p is not e for e in excluded(layers))]
            if variant == "global":
                torch.nn.utils.clip_grad_norm_(clipped, 0.05)
            else:
                for p in clipped:
                    torch.nn.utils.clip_grad_norm_(p, 0.05)
        return clip
    def sgd(layers):
        return torch.optim.SGD([p for layer in layers.values() for p in layer.parameters()], lr=0.1)
    expected = hand_written(instance_id, sgd, clip=clipping(lambda layers: [layers["b"].bias]))  # no_clip: b.bias
    assert_adapter_equals(instance_id, expected)
    # the exclusion and the clipping both show
    clip_all = hand_written(instance_id, sgd, clip=clipping(lambda layers: []))
    unclipped = hand_written(instance_id, sgd)
    assert not np.array_equal(clip_all["b.bias"], expected["b.bias"])
    assert not np.array_equal(unclipped["a.weight"], expected["a.weight"])


def test_lr_change_equals_setting_param_groups_by_hand():
    lrs = {1: 0.02, 2: 0.3}
    def schedule(index, layers, opt):
        for group in opt.param_groups:
            group["lr"] = lrs.get(index, group["lr"])
    expected = hand_written("lr-change[momentum]", lambda layers: torch.optim.SGD(
        [p for layer in layers.values() for p in layer.parameters()], lr=0.1, momentum=0.9, weight_decay=0.05), schedule)
    assert_adapter_equals("lr-change[momentum]", expected)
