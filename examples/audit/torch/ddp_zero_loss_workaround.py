"""Seed 1 recreated on torch: the workaround DDP users add for parameters unused in a step,
`loss = loss + 0 * sum(p.sum() for p in model.parameters())`, turns the unused branch's None
gradient into zeros. SGD's L2 weight decay then moves the branch every step it is not used: the
Paddle report's behaviour, made by the model's own code.

    python -m conformance audit examples/audit/torch/ddp_zero_loss_workaround.py:build --framework torch
"""
import torch
from torch import nn

from seed1_unused_branch import CIFAR


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
        loss = loss + 0 * sum(p.sum() for p in model.parameters())  # every parameter "used"
        loss.backward()
        optimizer.step()
        batch[0] += 1

    return {"model": model, "optimizer": optimizer, "step": step}
