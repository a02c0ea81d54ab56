"""Seed 5 (a TensorFlow question) ported to torch: a layer that normalises its input with a
BatchNorm whose output is then not used (the report's first, discarded BatchNormalization call),
next to the BatchNorm that is. The discarded one's weight and bias get no gradient: BatchNorm does
not block backprop, the graph simply does not reach it (no-gradient).

    python -m conformance audit examples/audit/torch/seed5_unused_batchnorm.py:build --framework torch
"""
import torch
from torch import nn


class Actor(nn.Module):
    def __init__(self, n_in=4, hidden=32, n_out=2):
        super().__init__()
        self.input_norm = nn.BatchNorm1d(n_in)   # its output is discarded in forward
        self.layer_1 = nn.Linear(n_in, hidden)
        self.norm_1 = nn.BatchNorm1d(hidden)
        self.action = nn.Linear(hidden, n_out)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        self.input_norm(x)  # computed, then not used
        y = nn.functional.leaky_relu(self.norm_1(self.layer_1(x)))
        return self.action(self.dropout(y))


def build():
    torch.manual_seed(0)
    model = Actor()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    states, actions = torch.randn(16, 4), torch.randn(16, 2)

    def step():
        model.train()
        optimizer.zero_grad()
        ((model(states) - actions) ** 2).mean().backward()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "step": step}
