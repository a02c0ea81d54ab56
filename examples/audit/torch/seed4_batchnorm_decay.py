"""Seed 4 (a Paddle Fluid report) ported to torch: a conv + BatchNorm net trained with L2 weight
decay. torch keeps BatchNorm's running mean and variance as buffers, outside model.parameters(): the
optimizer never holds them, so no regularizer reaches them. Expected: no finding.

    python -m conformance audit examples/audit/torch/seed4_batchnorm_decay.py:build --framework torch
"""
import torch
from torch import nn


def build():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    images, labels = torch.randn(8, 3, 8, 8), torch.arange(8) % 10

    def step():
        model.train()
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "step": step}
