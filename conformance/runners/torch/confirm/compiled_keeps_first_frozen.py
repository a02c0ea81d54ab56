"""compiled-keeps-first-frozen

torch.compile guards a module's parameters through the dict that holds them, and skips them while
that dict is unchanged; `requires_grad_()` changes the tensor, not the dict. So a model compiled
while a layer is frozen keeps its first graph after the layer is unfrozen: the layer gets no
gradient and does not train. In eager mode, and in torch.compile where the guard also checks
requires_grad (pytorch/pytorch#177158), unfreezing trains the layer from the next step on.

Upstream: https://github.com/pytorch/pytorch/pull/177158 (the guard skip and its fix; the bug is
pytorch/pytorch#139476)
"""
import warnings

import pytest
import torch

warnings.filterwarnings("ignore")


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_layer_unfrozen_after_compiling_stays_frozen(backend):
    torch.manual_seed(0)
    torch._dynamo.reset()
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    net[0].requires_grad_(False)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    model = torch.compile(net, backend=backend, fullgraph=True)
    x, target = torch.randn(8, 4), torch.randn(8, 2)
    moved = []
    for step in range(4):
        if step == 2:
            net[0].requires_grad_(True)  # unfrozen: trains from this step on, in eager code
        before = net[0].weight.detach().clone()
        opt.zero_grad()
        ((model(x) - target) ** 2).mean().backward()
        opt.step()
        moved.append(bool((net[0].weight != before).any()))
    print(f"torch {torch.__version__} {backend}: first layer moved at steps 0-3: {moved}; "
          f"its grad after unfreezing: {net[0].weight.grad}")
    assert moved == [False, False, False, False] and net[0].weight.grad is None
