"""Seed 3 (a MindSpore article) ported to torch: a conv net whose conv1 is kept from training in
three ways. Each function is one audit target:

    python -m conformance audit examples/audit/torch/seed3_frozen_conv.py:stop_gradient --framework torch

- stop_gradient: conv1's output is detached. No gradient reaches conv1: the optimizer holds it, and
  it gets none (no-gradient), and SGD without decay leaves it in place.
- requires_grad_false: conv1.weight.requires_grad = False, the optimizer built from all parameters.
  Its gradient stays None and torch's SGD skips it: it stays put.
- freeze_after_warmup: conv1 trains for one step, then is frozen; the loop clears with
  zero_grad(set_to_none=False) and SGD has momentum. The frozen weight keeps a zero gradient, and the
  momentum buffer of the warm-up step still moves it (frozen-but-moved).
"""
import torch
from torch import nn


class ConvNet(nn.Module):
    def __init__(self, detach=False):
        super().__init__()
        self.detach = detach
        self.conv1 = nn.Conv2d(1, 6, 4, bias=False)
        self.conv2 = nn.Conv2d(6, 2, 2)
        self.conv3 = nn.Conv2d(2, 6, 2)

    def forward(self, x):
        x = self.conv1(x)
        if self.detach:
            x = x.detach()  # torch's stop_gradient
        return self.conv3(self.conv2(x))


def _target(model, optimizer, set_to_none=True):
    images = torch.ones(1, 1, 32, 32)
    target = torch.zeros(1, 6, 27, 27)

    def step():
        optimizer.zero_grad(set_to_none=set_to_none)
        ((model(images) - target) ** 2).mean().backward()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "step": step}


def stop_gradient():
    torch.manual_seed(0)
    model = ConvNet(detach=True)
    return _target(model, torch.optim.SGD(model.parameters(), lr=0.01))


def requires_grad_false():
    torch.manual_seed(0)
    model = ConvNet()
    model.conv1.weight.requires_grad = False
    return _target(model, torch.optim.SGD(model.parameters(), lr=0.01))


def freeze_after_warmup():
    torch.manual_seed(0)
    model = ConvNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    built = _target(model, optimizer, set_to_none=False)
    built["step"]()  # the warm-up step, conv1 still training
    model.conv1.weight.requires_grad = False
    return built
