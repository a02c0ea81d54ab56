"""ndim-filter-sees-flat

torch FullyShardedDataParallel (FSDP1, use_orig_params=True): every original parameter is a 1-D view of a piece of
the flat parameter, so the users' weight-decay filter `p.ndim < 2` (meant to spare biases and norm scales) puts the
weight matrices in the no-decay group too, and SGD's weight decay moves none of them. Under FSDP2 (fully_shard) a
parameter is a DTensor with its own shape, and the filter spares the biases alone, as on one device.

Upstream: https://github.com/mlfoundations/open_clip/pull/358 ("since FSDP flattens everything, `p.ndim` is always
< 2, so everything would be excluded"); https://pytorch.org/docs/stable/fsdp.html (use_orig_params: "the sharded
form is always 1D, losing the original tensor structure")
"""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def replica(rank, port, engine, out):
    """On each of 2 ranks: the parameters `p.ndim < 2` leaves in the decay group, their shapes, and whether a step
    of weight decay alone (zero gradients) moves the first weight matrix (put together from the ranks' pieces)."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    if engine == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel
        model = FullyShardedDataParallel(net, use_orig_params=True, device_id=torch.device("cpu"))
    else:
        from torch.distributed.fsdp import fully_shard
        model = fully_shard(net)
    named = [(n.replace("_fsdp_wrapped_module.", ""), p) for n, p in model.named_parameters()]
    decay = [p for _, p in named if p.ndim >= 2]
    no_decay = [p for _, p in named if p.ndim < 2]
    opt = torch.optim.SGD([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}], lr=0.1, weight_decay=0.1)
    weight = net[0].weight
    before = weight.detach().clone()
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    moved = [bool((before != weight.detach()).any())]
    everyone = [None, None]
    dist.all_gather_object(everyone, moved)
    out.put((rank, [n for n, p in named if p.ndim >= 2], [tuple(p.shape) for _, p in named], any(sum(everyone, []))))
    dist.barrier()  # neither rank leaves while the other still talks to it
    os._exit(0)  # past gloo's teardown, which now and then aborts a rank that has already answered


def run(engine):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(replica, args=(port, engine, out), nprocs=2, start_method="spawn")
    return sorted(out.get() for _ in range(2))[0][1:]  # rank 0's


def test_an_ndim_filter_excludes_every_fsdp1_parameter_from_decay():
    fsdp1, fsdp2 = run("fsdp1"), run("fsdp2")
    for name, (decayed, shapes, moved) in (("FSDP1", fsdp1), ("FSDP2", fsdp2)):
        print(f"{name}: rank 0's parameter shapes {shapes}; decayed by `p.ndim >= 2`: {decayed}; "
              f"weight moved by decay: {moved}")
    assert fsdp1[0] == [] and not fsdp1[2]
    assert fsdp2[0] == ["0.weight", "1.weight"] and fsdp2[2]


if __name__ == "__main__":
    print("torch", torch.__version__)
    test_an_ndim_filter_excludes_every_fsdp1_parameter_from_decay()
    print("confirmed: ndim-filter-sees-flat")
