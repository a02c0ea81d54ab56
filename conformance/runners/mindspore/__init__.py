"""The mindspore room. runner.py: the adapter (model, optimizer, the hand-written loop, observations);
graph.py: what only GRAPH_MODE needs; trainer.py: what only TrainOneStepCell (--api trainer) needs;
audit.py: the probe of `audit` (PyNative steps); known.yaml: its semantic profile; expected.yaml: its
outcomes that are neither conform nor documented; confirm/: one standalone snippet per variant;
tests/: the adapter held to hand-written MindSpore code."""
from ..base import Offers

ADAPTER = "conformance.runners.mindspore.runner:MindSporeRunner"
AUDIT = "conformance.runners.mindspore.audit:MindSporeProbe"  # python -m conformance audit
OFFERS = Offers(devices=("cpu", "cuda", "ascend"),
                runs=({}, {"mode": "graph", "backend": "GRAPH_MODE"}, {"api": "trainer"},
                      {"mode": "graph", "backend": "GRAPH_MODE", "api": "trainer"}))
