"""PyTorch: the semantics the adapter observes match torch's own documentation, and the full run works.

Runs in the `torch` tox env only (torch is not installed in the `tests` env).
"""
import numpy as np
import pytest
import torch

from conformance import results
from conformance.__main__ import main
from conformance.runners.base import Unavailable
from conformance.runners.torch import TorchRunner
from conformance.scenario import observe
from conformance.schema import SPEC_DIR, load_spec
from conftest import explained_undocumented, lacking, missing_features, profile_gaps

SPEC = {i.id: i for i in load_spec(SPEC_DIR)}


def two_layers():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)


def test_default_zero_grad_leaves_unused_params_none():
    # docs: Optimizer.zero_grad(set_to_none=True) by default
    a, b = two_layers()
    opt = torch.optim.SGD([*a.parameters(), *b.parameters()], lr=0.1)
    b(a(torch.randn(8, 4))).pow(2).mean().backward()
    opt.zero_grad()
    b(torch.randn(8, 4)).pow(2).mean().backward()
    assert a.weight.grad is None and b.weight.grad is not None


def test_zero_grad_to_zeros_makes_decay_move_unused_params():
    # docs: "the step is done with a gradient of 0" when grads are zeros instead of None
    a, b = two_layers()
    opt = torch.optim.SGD([*a.parameters(), *b.parameters()], lr=0.1, weight_decay=0.01)
    b(a(torch.randn(8, 4))).pow(2).mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=False)
    before = a.weight.detach().clone()
    b(torch.randn(8, 4)).pow(2).mean().backward()
    opt.step()
    assert torch.count_nonzero(a.weight.grad) == 0 and not torch.equal(before, a.weight)


def test_plain_list_modules_are_not_parameters():
    net = torch.nn.Module()
    net.blocks = [torch.nn.Linear(2, 2)]
    net.listed = torch.nn.ModuleList([torch.nn.Linear(2, 2)])
    assert len(list(net.parameters())) == 2  # only the ModuleList's weight and bias


def test_batchnorm_running_stats_convention():
    # docs: new = (1 - momentum) * old + momentum * batch; running var unbiased
    bn = torch.nn.BatchNorm1d(1, momentum=0.1)
    bn(torch.tensor([[1.0], [3.0]]))
    assert bn.running_mean.item() == pytest.approx(0.2) and bn.running_var.item() == pytest.approx(1.1)


def test_adapter_is_faithful_to_plain_torch_code():
    """seed-1 through the adapter equals the same schedule written by hand in torch."""
    instance = SPEC["seed-1-decay-moves-unused-layer[momentum]"]
    case = instance.case
    obs = observe(TorchRunner("cpu"), case)

    from conformance.scenario import batch, initial_values
    init = initial_values(case)
    first, second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)
    with torch.no_grad():
        for layer, name in ((first, "first"), (second, "second")):
            layer.weight.copy_(torch.as_tensor(init[f"{name}.weight"].T))
            layer.bias.copy_(torch.as_tensor(init[f"{name}.bias"]))
    opt = torch.optim.SGD([*first.parameters(), *second.parameters()], lr=0.1, momentum=0.9,
                          weight_decay=0.0005)
    for index, path in enumerate([[first, second], [second]]):
        opt.zero_grad()
        x, t = batch(case, index, case.steps[index].path)
        y = torch.as_tensor(x)
        for layer in path:
            y = layer(y)
        ((y - torch.as_tensor(t)) ** 2).mean().backward()
        opt.step()
    np.testing.assert_array_equal(obs.steps[-1].values["first.weight"], first.weight.detach().numpy().T)
    np.testing.assert_array_equal(obs.steps[-1].values["second.weight"], second.weight.detach().numpy().T)


# ---------------------------------------------------------------- issue 14: defaults, LayerNorm,
# freezing between steps, decay exclusion, per-variable clipping, learning-rate changes
def hand_written(instance_id, make_opt, before_step=lambda index, layers, opt: None, clip=None):
    """The instance's schedule written by hand in torch (Linear layers only): returns its layers'
    weights after the last step, in the canonical (in, out) layout, for comparison with the adapter."""
    from conformance.scenario import batch, initial_values, schedule
    case = SPEC[instance_id].case
    init = initial_values(case)
    layers = {name: torch.nn.Linear(*spec.linear) for name, spec in case.model.layers.items()}
    with torch.no_grad():
        for name, layer in layers.items():
            layer.weight.copy_(torch.as_tensor(init[f"{name}.weight"].T))
            layer.bias.copy_(torch.as_tensor(init[f"{name}.bias"]))
    opt = make_opt(layers)
    for index, step in enumerate(schedule(case)):
        before_step(index, layers, opt)
        opt.zero_grad()
        x, t = batch(case, index, step.path)
        y = torch.as_tensor(x)
        for name in step.path:
            y = layers[name](y)
        ((y - torch.as_tensor(t)) ** 2).mean().backward()
        if clip:
            clip(layers)
        opt.step()
    return {f"{n}.{r}": getattr(layer, r).detach().numpy().T.copy() for n, layer in layers.items() for r in ("weight", "bias")}


def assert_adapter_equals(instance_id, expected):
    obs = observe(TorchRunner("cpu"), SPEC[instance_id].case)
    for name, value in expected.items():
        np.testing.assert_array_equal(obs.steps[-1].values[name], value, err_msg=name)


@pytest.mark.parametrize("instance_id, cls", [("default-adamw-step", torch.optim.AdamW),
                                              ("default-momentum", torch.optim.SGD)])
def test_default_settings_are_left_out_and_read_back(instance_id, cls):
    """Left-out settings: the adapter reports torch's constructor defaults (its signature), and
    trains exactly as an optimizer built without them."""
    import inspect
    case = SPEC[instance_id].case
    obs = observe(TorchRunner("cpu"), case)
    signature = inspect.signature(cls).parameters
    assert obs.defaults and all(
        value == pytest.approx(signature[name.split(".")[1]].default) for name, value in obs.defaults.items())
    given = {"lr": case.optimizer.lr} if case.optimizer.lr != "default" else {}
    assert_adapter_equals(instance_id, hand_written(
        instance_id, lambda layers: cls([p for layer in layers.values() for p in layer.parameters()], **given)))


def test_default_norm_layers_read_back():
    momentum = observe(TorchRunner("cpu"), SPEC["default-bn-momentum"].case).defaults
    bn_eps = observe(TorchRunner("cpu"), SPEC["default-bn-eps"].case).defaults
    ln_eps = observe(TorchRunner("cpu"), SPEC["default-layernorm-eps"].case).defaults
    assert (momentum, bn_eps, ln_eps) == ({"bn.momentum": torch.nn.BatchNorm1d(1).momentum},
                                          {"bn.eps": torch.nn.BatchNorm1d(1).eps},
                                          {"ln.eps": torch.nn.LayerNorm(1).eps})


def test_layernorm_is_torchs_with_weight_and_bias():
    runner = TorchRunner("cpu")
    observe(runner, SPEC["layernorm-grads"].case)
    ln = runner.layers["ln"]
    assert isinstance(ln, torch.nn.LayerNorm) and ln.normalized_shape == (5,) and ln.eps == 1e-5
    assert runner.tensors["ln.weight"] is ln.weight and runner.tensors["ln.bias"] is ln.bias


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
    runner = TorchRunner("cpu")
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


# ---------------------------------------------------------------- issue 14, last part: Conv2d,
# Embedding, Dropout
def test_conv_layers_are_torchs_in_oihw_and_equal_the_model_by_hand():
    """Conv2d with padding k // 2 takes the canonical (out, in, kh, kw) weight as is; a BatchNorm after
    it is BatchNorm2d; the adapter's run equals conv -> bn -> flatten(1) -> linear written by hand."""
    from conformance.scenario import batch, initial_values
    case = SPEC["conv-bn-running-stats"].case
    runner = TorchRunner("cpu")
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
    from conformance.scenario import batch
    case = SPEC["embedding-padding-row[sgd]"].case
    runner = TorchRunner("cpu")
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
    runner = TorchRunner("cpu")
    from conformance.scenario import batch, initial_values
    runner.build(case.model, initial_values(case))
    assert isinstance(runner.layers["drop"], torch.nn.Dropout) and runner.layers["drop"].p == 0.5
    x, t = batch(case, 0, ["a", "drop", "b"])
    without = runner.forward(["a", "b"], x, t, train=False, backward=False)  # the same model, no dropout
    assert runner.forward(["a", "drop", "b"], x, t, train=False, backward=False) == without
    assert runner.forward(["a", "drop", "b"], x, t, train=True, backward=False) != without


def test_graph_mode_recompiles_when_a_layer_is_frozen_between_steps():
    """requires_grad is guarded: freezing `a` mid-run compiles a second graph of the same path (in
    which `a` gets no gradient), instead of reusing the first."""
    torch._dynamo.utils.counters.clear()
    obs = observe(TorchRunner("cpu", "graph"), SPEC["freeze-after-optimizer[sgd,default]"].case)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 2
    assert obs.steps[2].grads["a.weight"] is None and obs.steps[1].grads["a.weight"] is not None


def test_cuda_device():
    if torch.cuda.is_available():
        obs = observe(TorchRunner("cuda"), SPEC["sgd-numerics"].case)
        assert len(obs.steps) == 3
    else:
        with pytest.raises(Unavailable, match="cuda"):
            TorchRunner("cuda")


def test_ascend_is_refused():
    with pytest.raises(Unavailable, match="--device cpu/cuda, not ascend"):
        TorchRunner("ascend")


BACKENDS = TorchRunner.backends  # aot_eager (the default), inductor


def eager_and_graph(instance_id, backend):
    case = SPEC[instance_id].case
    return observe(TorchRunner("cpu"), case), observe(TorchRunner("cpu", "graph", backend=backend), case)


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_mode_really_compiles(backend):
    """The forward runs the graph torch.compile made: dynamo captured graphs, and the output of a
    path's model comes from AOTAutograd's compiled function, not from eager autograd."""
    torch._dynamo.utils.counters.clear()
    runner = TorchRunner("cpu", "graph", backend=backend)
    assert runner.backend == backend
    case = SPEC["seed-4-bn-stats-not-regularized[momentum,default]"].case
    observe(runner, case)
    stats = torch._dynamo.utils.counters["stats"]
    assert stats["unique_graphs"] >= 2, "a train and an eval graph of the same path"  # reset per case
    compiled = runner.compiled[("fc", "bn", "out")]
    assert isinstance(compiled, torch._dynamo.eval_frame.OptimizedModule)
    y = compiled(torch.randn(4, 4))
    assert type(y.grad_fn).__name__ == "CompiledFunctionBackward"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("instance_id", ["seed-1-decay-moves-unused-layer[adamw]", "seed-2-plain-list-sublayers",
                                         "seed-3-stop-gradient-vs-frozen[momentum,stop_gradient]",
                                         "seed-4-bn-stats-not-regularized[sgd,all]",
                                         "train-mode-reaches-contained[plain_list]",
                                         "freeze-bn-mid-training", "unfreeze-resumes[adam,default]",
                                         "layernorm-grads", "lr-change[momentum]", "conv-bn-running-stats",
                                         "seed-2-conv-blocks-in-plain-list[framework_list]",
                                         "embedding-padding-row[adam]", "embedding-frozen[adamw]",
                                         "dropout-off-in-eval", "dropout-in-container-follows-eval[framework_list]"])
def test_graph_mode_observes_what_eager_does(instance_id, backend):
    """Detach, frozen parameters, train/eval, BatchNorm statistics, plain containers, conv (flattened
    before the linear layer), embedding, dropout in eval: the compiled forward gives the eager observation (None stays None; values to float32 rounding)."""
    eager, graph = eager_and_graph(instance_id, backend)
    assert (graph.trainable, graph.optimizer_params) == (eager.trainable, eager.optimizer_params)
    for e, g in zip(eager.steps, graph.steps, strict=True):
        assert g.loss == pytest.approx(e.loss, rel=1e-5)
        for name, grad in e.grads.items():
            assert (g.grads[name] is None) == (grad is None), name
            if grad is not None:
                np.testing.assert_allclose(g.grads[name], grad, rtol=1e-4, atol=1e-5)
        for name, value in e.values.items():
            np.testing.assert_allclose(g.values[name], value, rtol=1e-4, atol=1e-5)


def test_graph_break_raises_instead_of_running_eager(monkeypatch):
    """fullgraph=True: code dynamo cannot put in the graph is an error, not a silent eager island."""
    linear = torch.nn.Linear.forward
    def breaking(self, x):
        torch._dynamo.graph_break()
        return linear(self, x)
    monkeypatch.setattr(torch.nn.Linear, "forward", breaking)
    with pytest.raises(torch._dynamo.exc.Unsupported, match="graph_break"):
        observe(TorchRunner("cpu", "graph"), SPEC["sgd-numerics"].case)


# torch's config.patch, not monkeypatch: undoing a monkeypatch deletes (hides) a dynamo config entry
@torch._dynamo.config.patch(recompile_limit=1)
def test_recompile_limit_raises_instead_of_running_eager():
    """Past dynamo's recompile limit torch runs the frame eagerly, unless fullgraph=True."""
    with pytest.raises(torch._dynamo.exc.FailOnRecompileLimitHit):  # seed-4 recompiles for eval
        observe(TorchRunner("cpu", "graph"), SPEC["seed-4-bn-stats-not-regularized[sgd,default]"].case)


@torch._dynamo.config.patch(recompile_limit=2)  # no case below needs more graphs
def test_graph_cases_do_not_accumulate_recompilations():
    """Every case builds new modules; dynamo is reset per case, so the limit counts one case only."""
    runner = TorchRunner("cpu", "graph")
    for instance_id in ("seed-4-bn-stats-not-regularized[sgd,default]", "seed-1-decay-moves-unused-layer[sgd]",
                        "grad-reference-linear-chain", "seed-5-unused-bn-grad"):
        observe(runner, SPEC[instance_id].case)


def test_inductor_cache_folder_is_one_per_run():
    """Workers of one run (a replacement after a timeout among them) share one private folder named
    by the run's process, the one a run that runs its cases in-process (repro) uses."""
    import multiprocessing
    import os
    import stat
    from conformance.runners.torch import graph
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:  # a new process per task
        first, second = (pool.apply(graph._fresh_cache_dir) for _ in range(2))
    own = graph._fresh_cache_dir()
    assert first == second == own and f"-run-{os.getpid()}-" in own
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o700


@torch._dynamo.config.patch(disable=True)
def test_compile_disabled_is_refused():
    with pytest.raises(Unavailable, match="TORCH_COMPILE_DISABLE"):
        TorchRunner("cpu", "graph")


def test_trainer_api_is_refused_with_one_line(capsys):
    assert main(["run", "--framework", "torch", "--api", "trainer"]) == 3
    err = capsys.readouterr().err
    assert "torch has no trainer of its own" in err and len(err.strip().splitlines()) == 1


def check_profile(doc, partial=False):
    assert {c.verdict for c in doc.cases if not lacking(c)} <= {"conform", "divergence"}, "no errors, nothing unsupported"
    assert not missing_features(doc), "the adapter expresses every spec feature"
    unexplained, unused = profile_gaps(doc)
    assert not unexplained, \
        "confirm these with a snippet, then add the variant to runners/torch/known.yaml or report them"
    # a Dropout in a plain list keeps dropping in eval: the container variant explains it too
    for case in (c for c in doc.cases if c.id == "dropout-in-container-follows-eval[plain_list]"):
        assert case.verdict == "divergence" and [v.name for v in case.documented.variants] == \
            ["plain-contained-layers-stay-train"]
    assert partial or not unused, "runners/torch/known.yaml lists variants that no divergence needed"
    assert not explained_undocumented(doc)


def test_full_run(tmp_path, capsys):
    out = tmp_path / "torch.json"
    assert main(["run", "--framework", "torch", "--out", str(out)]) == 0
    doc = results.read(out)
    assert doc.complete and doc.environment.framework_version == torch.__version__
    assert len(doc.cases) == len(SPEC) and len({c.base_id for c in doc.cases}) >= 30
    assert all(c.references and c.checks for c in doc.cases if not lacking(c))
    check_profile(doc)


def test_full_run_graph(tmp_path):
    """The whole spec compiled on the default backend (aot_eager: dynamo + AOTAutograd)."""
    out = tmp_path / "torch-graph.json"
    assert main(["run", "--framework", "torch", "--mode", "graph", "--out", str(out)]) == 0
    doc = results.read(out)
    assert doc.complete and (doc.environment.mode, doc.environment.backend) == ("graph", "aot_eager")
    assert len(doc.cases) == len(SPEC)
    check_profile(doc)


def test_seeds_run_on_inductor(tmp_path):
    out = tmp_path / "torch-inductor.json"
    assert main(["run", "--framework", "torch", "--mode", "graph", "--backend", "inductor", "-k", "seed-",
                 "--out", str(out)]) == 0
    doc = results.read(out)
    assert doc.complete and doc.environment.backend == "inductor"
    assert len(doc.cases) == sum(i.startswith("seed-") for i in SPEC)
    check_profile(doc, partial=True)
