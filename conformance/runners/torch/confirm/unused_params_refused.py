"""unused-params-refused

torch DistributedDataParallel built without find_unused_parameters=True, on a model with a layer its forward does
not use: the first backward never reduces the gradient bucket that holds the unused parameter (for a small model,
every parameter's), so each replica updates with its own rows' gradient and the replicas drift apart silently; the
next forward raises "Expected to have finished reduction in the prior iteration before starting a new one".
With find_unused_parameters=True the replicas stay together and the unused layer keeps no gradient.

Upstream: https://github.com/pytorch/pytorch/issues/57473
"""
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.used(x)


def replica(rank, port, find_unused, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(Net(), find_unused_parameters=find_unused)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)  # each replica its own rows
    x, t = torch.randn(4, 4, generator=g), torch.randn(4, 1, generator=g)
    ((model(x) - t) ** 2).mean().backward()
    opt.step()
    weight = model.module.used.weight.tolist()  # plain lists: a tensor would need its sender alive
    try:
        model(x)
        second = "ran"
    except RuntimeError as exc:
        second = str(exc).splitlines()[0]
    out.put((rank, weight, second))
    dist.barrier()  # neither rank leaves while the other still talks to it
    os._exit(0)  # past gloo's teardown, which now and then aborts a rank that has already answered


def run(find_unused):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # spawn, not fork: forked from pytest after other torch tests, a replica once hung for good in its gloo
    # group's teardown. torch's multiprocessing notes: a fork while background threads hold locks leaves the
    # child corrupted, to deadlock (https://pytorch.org/docs/stable/notes/multiprocessing.html)
    out = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(replica, args=(port, find_unused, out), nprocs=2, start_method="spawn")
    return {rank: (torch.tensor(weight), second) for rank, weight, second in (out.get() for _ in range(2))}


def test_an_unused_layer_leaves_the_first_step_uncombined_and_the_next_refused():
    undeclared, declared = run(False), run(True)
    print("find_unused_parameters=False: replicas agree after step 0:", torch.equal(undeclared[0][0], undeclared[1][0]),
          "| next forward:", undeclared[0][1])
    print("find_unused_parameters=True:  replicas agree after step 0:", torch.equal(declared[0][0], declared[1][0]),
          "| next forward:", declared[0][1])
    assert not torch.equal(undeclared[0][0], undeclared[1][0])
    assert undeclared[0][1].startswith("Expected to have finished reduction in the prior iteration")
    assert torch.equal(declared[0][0], declared[1][0]) and declared[0][1] == "ran"


if __name__ == "__main__":
    print("torch", torch.__version__)
    test_an_unused_layer_leaves_the_first_step_uncombined_and_the_next_refused()
    print("confirmed: unused-params-refused")
