"""sharded-unused-grads-zero

torch FullyShardedDataParallel (FSDP1, use_orig_params=True, one flat parameter) on a model with a layer its forward
does not use: after the backward, the unused layer's parameters hold a zero gradient (each original parameter's
.grad is a view of the reduced flat gradient), so SGD's weight decay moves the layer, as in seed 1. DDP with
find_unused_parameters=True and FSDP2's fully_shard leave the unused layer's gradient None, and SGD skips it.

Upstream: https://github.com/pytorch/pytorch/pull/87308 ("Some original parameters corresponding to one
FlatParameter may have None gradient while others do not. In that case, the flat_param.grad must be non-None.")
"""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = torch.nn.Linear(4, 2), torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.used(x)


def wrapped(engine, net):
    if engine == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel
        return FullyShardedDataParallel(net, use_orig_params=True, device_id=torch.device("cpu"))
    if engine == "fsdp2":
        from torch.distributed.fsdp import fully_shard
        return fully_shard(net)
    return torch.nn.parallel.DistributedDataParallel(net, find_unused_parameters=True)


def whole(engine, t):
    """A parameter's values: FSDP1's pieces (1-D, one per rank, in rank order) put together, an FSDP2 DTensor
    gathered, or DDP's copy."""
    if engine == "fsdp2":
        return t.full_tensor().detach().flatten()
    if engine == "ddp":
        return t.detach().flatten()
    pieces = [None, None]
    dist.all_gather_object(pieces, t.detach().flatten().tolist())
    return torch.tensor(pieces[0] + pieces[1])


def replica(rank, port, engine, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    torch.manual_seed(0)
    net = Net()
    model = wrapped(engine, net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=0.1)
    before = whole(engine, net.unused.weight)
    g = torch.Generator().manual_seed(rank)  # each replica its own rows
    x, t = torch.randn(4, 4, generator=g), torch.randn(4, 2, generator=g)
    ((model(x) - t) ** 2).mean().backward()
    grad = net.unused.weight.grad  # this rank's view: FSDP1's piece, possibly empty
    seen = "None" if grad is None else f"zeros of {tuple(grad.shape)}" if not grad.abs().sum() else "nonzero"
    opt.step()
    moved = not torch.equal(before, whole(engine, net.unused.weight))
    out.put((rank, seen, moved))
    dist.barrier()  # neither rank leaves while the other still talks to it
    os._exit(0)  # past gloo's teardown, which now and then aborts a rank that has already answered


def run(engine):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(replica, args=(port, engine, out), nprocs=2, start_method="spawn")
    return dict(sorted((rank, (seen, moved)) for rank, seen, moved in (out.get() for _ in range(2))))


def test_an_unused_layer_gets_zero_gradients_and_decays_under_fsdp1_only():
    fsdp1, fsdp2, ddp = run("fsdp1"), run("fsdp2"), run("ddp")
    for name, ranks in (("FSDP1", fsdp1), ("FSDP2", fsdp2), ("DDP  ", ddp)):
        print(f"{name}: unused.weight.grad per rank {[seen for seen, _ in ranks.values()]}, "
              f"moved by weight decay: {ranks[0][1]}")
    assert any(seen.startswith("zeros") for seen, _ in fsdp1.values()) and fsdp1[0][1]
    assert all(seen == "None" for seen, _ in fsdp2.values()) and not fsdp2[0][1]
    assert all(seen == "None" for seen, _ in ddp.values()) and not ddp[0][1]


if __name__ == "__main__":
    print("torch", torch.__version__)
    test_an_unused_layer_gets_zero_gradients_and_decays_under_fsdp1_only()
    print("confirmed: sharded-unused-grads-zero")
