"""clip-norm-per-shard

torch FullyShardedDataParallel (FSDP1, use_orig_params=True, one flat parameter): each rank holds an equal piece of
the flat parameter and only that piece's gradient, so torch.nn.utils.clip_grad_norm_ measures each rank's piece
alone and scales it by its own factor; the gradient put together is not the globally clipped one.
FullyShardedDataParallel.clip_grad_norm_ (the method FSDP1's docs point to) and FSDP2's DTensor gradients clip by
the global norm.

Upstream: https://pytorch.org/docs/stable/fsdp.html (FullyShardedDataParallel.clip_grad_norm_: "you should use this
method instead of torch.nn.utils.clip_grad_norm_ since this method handles the fact that gradients are sharded
across ranks")
"""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

MAX_NORM = 0.05


def whole_grads(engine, net):
    """The model's gradient as one flat list: FSDP1's per-rank pieces put together, or FSDP2's DTensors gathered."""
    if engine == "fsdp2":
        return torch.cat([p.grad.full_tensor().flatten() for p in net.parameters()])
    pieces = [None, None]
    dist.all_gather_object(pieces, [p.grad.flatten().tolist() if p.grad is not None else [] for p in net.parameters()])
    return torch.tensor([x for i in range(len(pieces[0])) for rank in pieces for x in rank[i]])


def replica(rank, port, engine, clip, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    if engine == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel
        model = FullyShardedDataParallel(net, use_orig_params=True, device_id=torch.device("cpu"))
    else:
        from torch.distributed.fsdp import fully_shard
        model = fully_shard(net)
    g = torch.Generator().manual_seed(rank)  # each replica its own rows
    x, t = torch.randn(4, 4, generator=g), torch.randn(4, 2, generator=g)
    ((model(x) - t) ** 2).mean().backward()
    combined = whole_grads(engine, net)
    if clip == "fsdp-method":
        model.clip_grad_norm_(MAX_NORM)
    else:
        torch.nn.utils.clip_grad_norm_(list(model.parameters()), MAX_NORM)
    clipped = whole_grads(engine, net)
    out.put((rank, combined.tolist(), clipped.tolist()))
    dist.barrier()  # neither rank leaves while the other still talks to it
    os._exit(0)  # past gloo's teardown, which now and then aborts a rank that has already answered


def run(engine, clip):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(replica, args=(port, engine, clip, out), nprocs=2, start_method="spawn")
    rank0 = sorted(out.get() for _ in range(2))[0]
    combined, clipped = torch.tensor(rank0[1]), torch.tensor(rank0[2])
    globally = combined * min(1.0, MAX_NORM / float(combined.norm()))
    return float(combined.norm()), float((clipped - globally).abs().max())


def test_fsdp1_clips_each_ranks_piece_by_its_own_norm():
    utils, method, fsdp2 = run("fsdp1", "nn.utils"), run("fsdp1", "fsdp-method"), run("fsdp2", "nn.utils")
    print(f"global norm before clipping {utils[0]:.4f}, max_norm {MAX_NORM}; max |clipped - globally clipped|:")
    print(f"  FSDP1 + torch.nn.utils.clip_grad_norm_:           {utils[1]:.2e}")
    print(f"  FSDP1 + FullyShardedDataParallel.clip_grad_norm_: {method[1]:.2e}")
    print(f"  FSDP2 + torch.nn.utils.clip_grad_norm_:           {fsdp2[1]:.2e}")
    assert utils[0] > MAX_NORM and utils[1] > 1e-4
    assert method[1] < 1e-6 and fsdp2[1] < 1e-6


if __name__ == "__main__":
    print("torch", torch.__version__)
    test_fsdp1_clips_each_ranks_piece_by_its_own_norm()
    print("confirmed: clip-norm-per-shard")
