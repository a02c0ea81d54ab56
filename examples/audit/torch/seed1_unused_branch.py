"""Seed 1 (a Paddle report) ported to torch: a CIFAR net whose forward uses conv1 on even batches and
conv2 on odd ones, trained with SGD and L2 weight decay, the loop clearing gradients torch's default
way (zero_grad() sets them to None). The branch left out of a step has no gradient, and torch's SGD
skips a parameter without one: nothing moves without a gradient here, unlike Paddle.

    python -m conformance audit examples/audit/torch/seed1_unused_branch.py:build --framework torch
"""
import torch
from torch import nn


class CIFAR(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1)
        self.conv2 = nn.Conv2d(3, 8, 3, 1, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x, ind):
        x = self.conv1(x) if ind % 2 == 0 else self.conv2(x)
        return self.fc(self.pool(x).flatten(1))


def build():
    torch.manual_seed(0)
    model = CIFAR()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=5e-4)
    images, labels = torch.randn(4, 3, 16, 16), torch.tensor([0, 1, 2, 3])
    batch = [0]

    def step():
        model.train()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images, batch[0]), labels)
        loss.backward()
        optimizer.step()
        batch[0] += 1

    return {"model": model, "optimizer": optimizer, "step": step}
