"""replica-grads-packed-by-position

torch FSDP2 (fully_shard) on a model whose replicas use different layers: rank 0's forward goes through b, rank 1's
through c (two Linear(3, 2), the same size). Each rank reduce-scatters only the gradients it holds, packed one after
another, and the reduction adds them by position: b's shard on rank 0 receives the mean of rank 0's b gradient and
rank 1's c gradient, c's shard on rank 1 the same mix of their other rows, and rank 0 holds no gradient for c (nor
rank 1 for b). DistributedDataParallel (find_unused_parameters=True) gives b and c each their own gradient, halved.

Upstream: https://github.com/pytorch/pytorch/issues/158719 ("some parameters produce gradients on some ranks while
not producing gradients on other ranks, resulting in a collective tensor size mismatch"; here the sizes match)
"""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class Net(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        self.a, self.b, self.c = torch.nn.Linear(4, 3), torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)

    def forward(self, x):
        return (self.b if self.rank == 0 else self.c)(self.a(x))


def rows(rank):
    g = torch.Generator().manual_seed(rank)  # each replica its own rows
    return torch.randn(4, 4, generator=g), torch.randn(4, 2, generator=g)


def own_gradients(rank):
    """One replica alone, no engine: its own gradients of b.weight and c.weight (None where its path skips them)."""
    torch.manual_seed(0)
    net = Net(rank)
    x, t = rows(rank)
    ((net(x) - t) ** 2).mean().backward()
    return [None if p.grad is None else p.grad.clone() for p in (net.b.weight, net.c.weight)]


def replica(rank, port, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    from torch.distributed.fsdp import fully_shard
    torch.manual_seed(0)
    net = Net(rank)
    fully_shard(net)
    x, t = rows(rank)
    ((net(x) - t) ** 2).mean().backward()
    # each rank's own chunk (dim 0) of the two gradients, as its optimizer sees them
    local = [None if p.grad is None else p.grad.to_local().tolist() for p in (net.b.weight, net.c.weight)]
    out.put((rank, local))
    dist.barrier()  # neither rank leaves while the other still talks to it
    os._exit(0)  # past gloo's teardown, which now and then aborts a rank that has already answered


def test_gradients_of_different_layers_are_added_by_position():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(replica, args=(port, out), nprocs=2, start_method="spawn")
    local = dict(out.get() for _ in range(2))
    (b0, _), (_, c1) = own_gradients(0), own_gradients(1)
    mixed = (b0 + c1) / 2  # b.weight's rows from rank 0 and c.weight's from rank 1, added by position
    print("rank 0: b.weight grad chunk", local[0][0], "| c.weight grad", local[0][1])
    print("rank 1: b.weight grad", local[1][0], "| c.weight grad chunk", local[1][1])
    print("(rank 0's b + rank 1's c) / 2, by rows:", mixed.tolist())
    assert local[0][1] is None and local[1][0] is None
    assert torch.allclose(torch.tensor(local[0][0]), mixed[:1], atol=1e-6)
    assert torch.allclose(torch.tensor(local[1][1]), mixed[1:], atol=1e-6)


if __name__ == "__main__":
    print("torch", torch.__version__)
    test_gradients_of_different_layers_are_added_by_position()
    print("confirmed: replica-grads-packed-by-position")
