"""replica-grads-averaged

torch DistributedDataParallel averages the replicas' gradients ("During the backwards pass, gradients from each
node are averaged"). Each replica's gradient is that of its own rows' mean loss, so with unequal shares (2 and 6
samples of a batch of 8) a sample of the smaller share weighs three times a sample of the larger; one device on the
8 samples weighs all of them the same. With equal shares the two agree.

Upstream: https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html
"""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SHARES = [2, 6]


def data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)


def replica(rank, port, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    x, t = data()
    rows = slice(sum(SHARES[:rank]), sum(SHARES[:rank + 1]))
    ((model(x[rows]) - t[rows]) ** 2).mean().backward()
    out.put((rank, model.module.weight.grad.tolist()))  # plain lists: a tensor would need its sender alive
    dist.barrier()  # neither rank leaves while the other still talks to it
    os._exit(0)  # past gloo's teardown, which now and then aborts a rank that has already answered
    dist.destroy_process_group()


def test_ddp_averages_the_replicas_mean_gradients():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # spawn, not fork: forked from pytest after other torch tests, a replica once hung for good in its gloo
    # group's teardown. torch's multiprocessing notes: a fork while background threads hold locks leaves the
    # child corrupted, to deadlock (https://pytorch.org/docs/stable/notes/multiprocessing.html)
    out = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(replica, args=(port, out), nprocs=2, start_method="spawn")
    grads = {rank: torch.tensor(g) for rank, g in (out.get() for _ in range(2))}
    torch.manual_seed(0)
    one = torch.nn.Linear(4, 1)
    x, t = data()
    whole = torch.autograd.grad(((one(x) - t) ** 2).mean(), one.weight)[0]
    own = [torch.autograd.grad(((one(x[r]) - t[r]) ** 2).mean(), one.weight)[0]
           for r in (slice(0, 2), slice(2, 8))]
    print("DDP gradient (rank 0)      ", grads[0].flatten().tolist())
    print("mean of the replicas' means", ((own[0] + own[1]) / 2).flatten().tolist())
    print("one device on the batch   ", whole.flatten().tolist())
    assert torch.equal(grads[0], grads[1])
    assert torch.allclose(grads[0], (own[0] + own[1]) / 2, atol=1e-6)
    assert not torch.allclose(grads[0], whole, atol=1e-3)


if __name__ == "__main__":
    print("torch", torch.__version__)
    test_ddp_averages_the_replicas_mean_gradients()
    print("confirmed: replica-grads-averaged")
