"""The runs the torch room offers and refuses: devices, graph mode (torch.compile on each backend, as
eager code computes it, with no quiet fall-back to eager), and the trainer api it has not."""
import multiprocessing
import os
import stat

import numpy as np
import pytest
import torch

from conformance.__main__ import main
from conformance.engine.scenario import observe
from conformance.runners.base import Unavailable
from conformance.runners.torch import OFFERS, graph
from conformance.runners.torch.runner import TorchRunner

from .common import SPEC

# aot_eager (the default), inductor; each once (a data-parallel run compiles on aot_eager too)
BACKENDS = list(dict.fromkeys(run["backend"] for run in OFFERS.runs if run.get("mode") == "graph"))


# ---------------------------------------------------------------- devices, version, refusals
def test_version_is_the_installed_torch():
    assert TorchRunner.version() == torch.__version__


def test_cuda_device():
    if torch.cuda.is_available():
        obs = observe(TorchRunner(device="cuda"), SPEC["sgd-numerics"].case)
        assert len(obs.steps) == 3
    else:
        with pytest.raises(Unavailable, match="cuda"):
            TorchRunner(device="cuda")


def test_ascend_is_refused():
    with pytest.raises(Unavailable, match="--device cpu/cuda, not ascend"):
        TorchRunner(device="ascend")


def test_trainer_api_is_refused_with_one_line(capsys):
    assert main(["run", "--framework", "torch", "--api", "trainer"]) == 3
    err = capsys.readouterr().err
    assert "torch has no trainer of its own" in err and len(err.strip().splitlines()) == 1


@torch._dynamo.config.patch(disable=True)
def test_compile_disabled_is_refused():
    with pytest.raises(Unavailable, match="TORCH_COMPILE_DISABLE"):
        TorchRunner(mode="graph")


# ---------------------------------------------------------------- torch.compile itself, no adapter
class CompiledNet(torch.nn.Module):
    """What graph mode must not change: train/eval, detach, frozen parameters, BatchNorm statistics,
    and a BatchNorm in a plain list (unregistered: eval() misses it, compiled or not)."""

    def __init__(self):
        super().__init__()
        self.a, self.bn, self.b = torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2)
        self.plain = [torch.nn.BatchNorm1d(2)]  # not registered
        self.detach = False

    def forward(self, x):
        y = self.a(x)
        if self.detach:
            y = y.detach()
        return self.plain[0](self.b(self.bn(y)))


# (train or eval, detach after a, parameter frozen for this step: also after the model was compiled)
SCHEDULE = [("train", False, None), ("eval", False, None), ("train", False, None), ("train", True, None),
            ("train", False, "a.weight"), ("eval", False, "a.weight"), ("train", False, None)]


def train_by_hand(backend=None):
    """The schedule in plain torch, the model compiled on `backend` (fullgraph) or eager: per step the
    loss, the gradients and every state tensor after the update."""
    torch.manual_seed(0)
    net = CompiledNet()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    if backend:
        torch._dynamo.reset()  # the recompile limit counts this model's graphs only
    model = torch.compile(net, backend=backend, fullgraph=True) if backend else net
    log = []
    for i, (mode, detach, frozen) in enumerate(SCHEDULE):
        getattr(net, mode)()
        net.detach = detach
        for name, p in net.named_parameters():
            p.requires_grad_(name != frozen)
        opt.zero_grad()
        loss = model(torch.randn(8, 4, generator=torch.Generator().manual_seed(i))).pow(2).mean()
        loss.backward()
        opt.step()
        grads = {n: None if p.grad is None else p.grad.clone() for n, p in net.named_parameters()}
        state = {**net.state_dict(), "plain.running_mean": net.plain[0].running_mean}
        log.append((loss.detach(), grads, {n: t.detach().clone() for n, t in state.items()}))
    return log


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_model_trains_as_the_eager_one(backend):
    """torch.compile'd forward vs eager code: a gradient is None in the compiled run exactly where it
    is None in the eager one; aot_eager (eager kernels) is bitwise equal at every step, inductor (its
    own generated code) equal to float32 rounding (torch 2.13.0 CPU: < 3e-6)."""
    torch._dynamo.utils.counters.clear()
    eager, compiled = train_by_hand(), train_by_hand(backend)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 2, "torch.compile made graphs"
    for step, ((e_loss, e_grads, e_state), (g_loss, g_grads, g_state)) in enumerate(zip(eager, compiled, strict=True)):
        where = f"step {step} {SCHEDULE[step]}"
        assert [n for n, g in g_grads.items() if g is None] == [n for n, g in e_grads.items() if g is None], where
        pairs = [("loss", e_loss, g_loss)] + [(f"grad {n}", g, g_grads[n]) for n, g in e_grads.items() if g is not None]
        pairs += [(n, value, g_state[n]) for n, value in e_state.items()]
        for name, e, g in pairs:
            if backend == "aot_eager":
                assert torch.equal(e, g), f"{where}: {name}"
            else:
                torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5, msg=f"{where}: {name}")


# ---------------------------------------------------------------- graph mode through the adapter
def test_graph_mode_defaults_to_aot_eager():
    assert TorchRunner(mode="graph").backend == BACKENDS[0] == "aot_eager"


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_mode_really_compiles(backend):
    """The forward runs the graph torch.compile made: dynamo captured graphs, and the output of a
    path's model comes from AOTAutograd's compiled function, not from eager autograd."""
    torch._dynamo.utils.counters.clear()
    runner = TorchRunner(mode="graph", backend=backend)
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
    before the linear layer), embedding, dropout in eval: the compiled forward gives the eager
    observation (None stays None; values to float32 rounding)."""
    case = SPEC[instance_id].case
    eager, compiled = observe(TorchRunner(), case), observe(TorchRunner(mode="graph", backend=backend), case)
    assert (compiled.trainable, compiled.optimizer_params) == (eager.trainable, eager.optimizer_params)
    for e, g in zip(eager.steps, compiled.steps, strict=True):
        assert g.loss == pytest.approx(e.loss, rel=1e-5)
        for name, grad in e.grads.items():
            assert (g.grads[name] is None) == (grad is None), name
            if grad is not None:
                np.testing.assert_allclose(g.grads[name], grad, rtol=1e-4, atol=1e-5)
        for name, value in e.values.items():
            np.testing.assert_allclose(g.values[name], value, rtol=1e-4, atol=1e-5)


def test_graph_mode_recompiles_when_a_layer_is_frozen_between_steps():
    """requires_grad is guarded: freezing `a` mid-run compiles a second graph of the same path (in
    which `a` gets no gradient), instead of reusing the first."""
    torch._dynamo.utils.counters.clear()
    obs = observe(TorchRunner(mode="graph"), SPEC["freeze-after-optimizer[sgd,default]"].case)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 2
    assert obs.steps[2].grads["a.weight"] is None and obs.steps[1].grads["a.weight"] is not None


def test_graph_break_raises_instead_of_running_eager(monkeypatch):
    """fullgraph=True: code dynamo cannot put in the graph is an error, not a silent eager island."""
    linear = torch.nn.Linear.forward
    def breaking(self, x):
        torch._dynamo.graph_break()
        return linear(self, x)
    monkeypatch.setattr(torch.nn.Linear, "forward", breaking)
    with pytest.raises(torch._dynamo.exc.Unsupported, match="graph_break"):
        observe(TorchRunner(mode="graph"), SPEC["sgd-numerics"].case)


# torch's config.patch, not monkeypatch: undoing a monkeypatch deletes (hides) a dynamo config entry
@torch._dynamo.config.patch(recompile_limit=1)
def test_recompile_limit_raises_instead_of_running_eager():
    """Past dynamo's recompile limit torch runs the frame eagerly, unless fullgraph=True."""
    with pytest.raises(torch._dynamo.exc.FailOnRecompileLimitHit):  # seed-4 recompiles for eval
        observe(TorchRunner(mode="graph"), SPEC["seed-4-bn-stats-not-regularized[sgd,default]"].case)


@torch._dynamo.config.patch(recompile_limit=2)  # no case below needs more graphs
def test_graph_cases_do_not_accumulate_recompilations():
    """Every case builds new modules; dynamo is reset per case, so the limit counts one case only."""
    runner = TorchRunner(mode="graph")
    for instance_id in ("seed-4-bn-stats-not-regularized[sgd,default]", "seed-1-decay-moves-unused-layer[sgd]",
                        "grad-reference-linear-chain", "seed-5-unused-bn-grad"):
        observe(runner, SPEC[instance_id].case)


def test_inductor_cache_folder_is_one_per_run():
    """Workers of one run (a replacement after a timeout among them) share one private folder named
    by the run's process, the one a run that runs its cases in-process (repro) uses."""
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:  # a new process per task
        first, second = (pool.apply(graph._fresh_cache_dir) for _ in range(2))
    own = graph._fresh_cache_dir()
    assert first == second == own and f"-run-{os.getpid()}-" in own
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o700
