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
from conftest import explained_undocumented, profile_gaps

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


def test_graph_mode_is_refused_with_one_line(capsys):
    assert main(["run", "--framework", "torch", "--mode", "graph"]) == 3
    err = capsys.readouterr().err
    assert "offers --mode eager, not graph" in err and len(err.strip().splitlines()) == 1


def test_full_run(tmp_path, capsys):
    out = tmp_path / "torch.json"
    assert main(["run", "--framework", "torch", "--out", str(out)]) == 0
    doc = results.read(out)
    assert doc.complete and doc.environment.framework_version == torch.__version__
    assert len(doc.cases) == len(SPEC) and len({c.base_id for c in doc.cases}) >= 30
    assert all(c.references and c.checks for c in doc.cases)
    assert {c.verdict for c in doc.cases} <= {"conform", "divergence"}, "no errors, nothing unsupported"
    unexplained, unused = profile_gaps(doc)
    assert not unexplained, "confirm these with a snippet, then add the variant to known/torch.yaml or report them"
    assert not unused, "known/torch.yaml lists variants that no divergence needed"
    assert not explained_undocumented(doc)
