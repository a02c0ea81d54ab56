"""Data parallelism: DistributedDataParallel over gloo, each rank training on its share of the batch, as a
script torchrun starts. `audit --replicas 2` starts the ranks with torchrun's variables and compares them:

    python -m conformance audit examples/audit/torch/ddp_replicas.py:build --framework torch --replicas 2
    python -m conformance audit examples/audit/torch/ddp_replicas.py:unused_head --framework torch --replicas 2

- build: a BatchNorm between two layers. DDP averages the gradients, so the parameters stay equal on every rank;
  each rank updates the BatchNorm's running statistics with its own rows (rank 0's are broadcast to the others
  at the next forward, broadcast_buffers=True): replica-statistics-differ.
- unused_head: a head the forward pass skips, DDP built without find_unused_parameters=True: its bucket is never
  reduced, the first step trains each rank on its own rows' gradients (replicas-disagree), and the second step's
  forward raises, DDP's own message naming the cause.
"""
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


class Net(nn.Module):
    def __init__(self, head=False):
        super().__init__()
        self.first, self.norm, self.second = nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2)
        if head:
            self.head = nn.Linear(8, 2)  # never called by forward

    def forward(self, x):
        return self.second(torch.relu(self.norm(self.first(x))))


def _ranked(model):
    """The model wrapped by DDP in this rank's process group, the rank's rows of a fixed batch, and its optimizer."""
    if not dist.is_initialized():
        dist.init_process_group("gloo")  # env:// from torchrun's variables
    rank, world = dist.get_rank(), dist.get_world_size()
    generator = torch.Generator().manual_seed(1)
    x, y = torch.randn(16, 4, generator=generator), torch.randn(16, 2, generator=generator)
    return DistributedDataParallel(model), x[rank::world], y[rank::world]


def build(head=False):
    torch.manual_seed(0)
    model = Net(head)
    ddp, x, y = _ranked(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step():
        optimizer.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "step": step}


def unused_head():
    return build(head=True)
