"""The paddle room. runner.py: the adapter (the hand-written dygraph loop, also under to_static and in hapi's
trainer); graph.py: --mode graph (paddle.jit.to_static, a mixin of the loop; and the static program, an adapter
of its own); common.py: what the two adapters share; trainer.py: hapi's Model (--api trainer); audit.py: the
probe of `audit` (dygraph); known.yaml: its semantic profile; expected.yaml: its outcomes that are
neither conform nor documented; confirm/: one standalone snippet per variant; tests/: the adapter held
to hand-written paddle code."""
from ..base import Offers

ADAPTER = "conformance.runners.paddle.runner:PaddleRunner"
# the static program (Program + Executor) shares no step with the dygraph loop: a class of its own
ADAPTERS = (({"mode": "graph", "backend": "static"}, "conformance.runners.paddle.graph:StaticRunner"),)
AUDIT = "conformance.runners.paddle.audit:PaddleProbe"  # python -m conformance audit
# how its probe reads gradients before the update (docs/audit.md)
AUDIT_READS = ("dygraph only: the optimizer instance's `step` and `minimize` are wrapped to read `p.grad` (or `main_grad`) first; the instance attributes are deleted afterwards")


def AUDIT_RANK_ENV(rank: int, world: int, port: int) -> dict[str, str]:
    """`audit --replicas N`: what `python -m paddle.distributed.launch --nproc_per_node N` gives each rank on one
    host (gloo on CPU), which a user's dist.init_parallel_env reads: its id, every rank's endpoint (ports from
    `port` on), the master's."""
    endpoints = [f"127.0.0.1:{port + 1 + r}" for r in range(world)]
    return {"PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(world), "PADDLE_GLOBAL_RANK": str(rank),
            "PADDLE_GLOBAL_SIZE": str(world), "PADDLE_LOCAL_RANK": str(rank), "PADDLE_LOCAL_SIZE": str(world),
            "PADDLE_RANK_IN_NODE": str(rank), "PADDLE_NNODES": "1", "PADDLE_DISTRI_BACKEND": "gloo",
            "PADDLE_MASTER": f"127.0.0.1:{port}", "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints),
            "PADDLE_CURRENT_ENDPOINT": endpoints[rank]}


# hapi's Model runs in dygraph: the trainer has no graph run
OFFERS = Offers(devices=("cpu", "cuda", "ascend"),
                runs=({}, {"mode": "graph", "backend": "to_static"}, {"mode": "graph", "backend": "static"},
                      {"api": "trainer"}, {"replicas": "2"}, {"api": "trainer", "replicas": "2"},
                      {"mode": "graph", "backend": "to_static", "replicas": "2"}),
                refused={"engine=group_sharded": (
                    "the paddle room offers no group-sharded run: paddle.distributed.sharding.group_sharded_parallel "
                    "asserts a GPU, XPU or custom device (\"group_sharded_parallel only support gpu, xpu and "
                    "custom_device now\" in 3.3.1, \"gpu and xpu\" in 2.6.2), and its GPU run is not built")})
