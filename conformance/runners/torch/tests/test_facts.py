"""torch facts the adapter relies on that no confirm snippet shows (no variant: the reference
semantics agree with them), written as plain torch code from torch's documentation."""
import pytest
import torch


def two_layers():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)


def test_default_zero_grad_leaves_unused_params_none():
    # docs: Optimizer.zero_grad(set_to_none=True) by default; the adapter's "default" clearing calls it plainly
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


def test_batchnorm_running_stats_convention():
    # docs: new = (1 - momentum) * old + momentum * batch; running var unbiased
    bn = torch.nn.BatchNorm1d(1, momentum=0.1)
    bn(torch.tensor([[1.0], [3.0]]))
    assert bn.running_mean.item() == pytest.approx(0.2) and bn.running_var.item() == pytest.approx(1.1)
