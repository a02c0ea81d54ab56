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
OFFERS = Offers(devices=("cpu", "cuda", "ascend"),
                runs=({}, {"mode": "graph", "backend": "GRAPH_MODE"}, {"api": "trainer"},
                      {"mode": "graph", "backend": "GRAPH_MODE", "api": "trainer"}, {"replicas": "2"},
                      {"mode": "graph", "backend": "GRAPH_MODE", "replicas": "2"}, {"api": "trainer", "replicas": "2"},
                      {"mode": "graph", "backend": "GRAPH_MODE", "api": "trainer", "replicas": "2"}))
