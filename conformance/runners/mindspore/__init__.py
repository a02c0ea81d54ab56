"""The mindspore room. runner.py: the adapter (model, optimizer, the hand-written loop, observations);
graph.py: what only GRAPH_MODE needs; trainer.py: what only TrainOneStepCell (--api trainer) needs;
audit.py: the probe of `audit` (PyNative steps); known.yaml: its semantic profile; expected.yaml: its
outcomes that are neither conform nor documented; confirm/: one standalone snippet per variant;
tests/: the adapter held to hand-written MindSpore code."""
from ..base import Offers

ADAPTER = "conformance.runners.mindspore.runner:MindSporeRunner"
AUDIT = "conformance.runners.mindspore.audit:MindSporeProbe"  # python -m conformance audit
# how its probe reads gradients before the update (docs/audit.md)
AUDIT_READS = ("PyNative only: the optimizer instance gets a subclass of its class whose `__call__` reads the gradients it is handed (a loop's `optimizer(grads)` or `TrainOneStepCell`'s); its class is put back afterwards; an update compiled under `@ms.jit` or GRAPH_MODE is refused in one line")


def AUDIT_RANK_ENV(rank: int, world: int, port: int) -> dict[str, str]:
    """`audit --replicas N`: what msrun gives each worker on one host, which a user's
    mindspore.communication.init() reads: the cluster's size, where its scheduler listens, the worker's role and id."""
    return {"MS_WORKER_NUM": str(world), "MS_SCHED_HOST": "127.0.0.1", "MS_SCHED_PORT": str(port),
            "MS_ROLE": "MS_WORKER", "MS_NODE_ID": str(rank), "RANK_ID": str(rank), "RANK_SIZE": str(world)}


def AUDIT_SCHEDULER(world: int, port: int) -> tuple[str, dict[str, str]]:
    """msrun also starts a scheduler, no rank, whose init() serves the workers until they leave (msrun runs the
    user's script in that role; its init() never returns there): `audit --replicas N` starts init() alone so."""
    worker = AUDIT_RANK_ENV(0, world, port)
    worker.pop("MS_NODE_ID")  # msrun names no node for its scheduler
    return "from mindspore.communication import init; init()", {**worker, "MS_ROLE": "MS_SCHED"}


OFFERS = Offers(devices=("cpu", "cuda", "ascend"),
                runs=({}, {"mode": "graph", "backend": "GRAPH_MODE"}, {"api": "trainer"},
                      {"mode": "graph", "backend": "GRAPH_MODE", "api": "trainer"}, {"replicas": "2"},
                      {"mode": "graph", "backend": "GRAPH_MODE", "replicas": "2"}, {"api": "trainer", "replicas": "2"},
                      {"mode": "graph", "backend": "GRAPH_MODE", "api": "trainer", "replicas": "2"}))
