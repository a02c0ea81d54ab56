"""The torch room. runner.py: the adapter (the hand-written loop); graph.py: --mode graph
(torch.compile); audit.py: the probe of `audit`; trainer.py: why there is no --api trainer; known.yaml: its semantic profile;
expected.yaml: its outcomes that are neither conform nor documented; confirm/: one standalone snippet
per variant; tests/: the adapter held to hand-written torch code."""
from ..base import Offers
from .trainer import NO_TRAINER

ADAPTER = "conformance.runners.torch.runner:TorchRunner"
AUDIT = "conformance.runners.torch.audit:TorchProbe"  # python -m conformance audit
# how its probe reads gradients before the update (docs/audit.md)
AUDIT_READS = ("an optimizer step pre-hook (`Optimizer.register_step_pre_hook`) reads `p.grad` of each parameter the optimizer holds, or, where step() is handed a closure that computes them (Lightning, LBFGS), as that closure returns; removed afterwards")


def AUDIT_RANK_ENV(rank: int, world: int, port: int) -> dict[str, str]:
    """`audit --replicas N`: what torchrun sets for each rank, the env:// rendezvous a user's
    dist.init_process_group reads."""
    return {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}


# aot_eager: dynamo + AOTAutograd (where compiled gradient semantics live), graphs run by eager
# kernels; inductor: the default backend, which also generates C++ (CPU) / Triton (CUDA) code
OFFERS = Offers(devices=("cpu", "cuda"),
                runs=({}, {"mode": "graph", "backend": "aot_eager"}, {"mode": "graph", "backend": "inductor"},
                      {"replicas": "2"}, {"mode": "graph", "backend": "aot_eager", "replicas": "2"},
                      {"replicas": "2", "engine": "fsdp1"}, {"replicas": "2", "engine": "fsdp2"}),
                refused={"api=trainer": NO_TRAINER})
