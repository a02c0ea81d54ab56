"""The paddle room. runner.py: the adapter (the hand-written loop); graph.py: --mode graph
(paddle.jit.to_static, and the static program); trainer.py: hapi's Model (--api trainer); audit.py: the
probe of `audit` (dygraph); known.yaml: its semantic profile; expected.yaml: its outcomes that are
neither conform nor documented; confirm/: one standalone snippet per variant; tests/: the adapter held
to hand-written paddle code."""
from ..base import Offers

ADAPTER = "conformance.runners.paddle.runner:PaddleRunner"
AUDIT = "conformance.runners.paddle.audit:PaddleProbe"  # python -m conformance audit
# how its probe reads gradients before the update (docs/audit.md)
AUDIT_READS = ("dygraph only: the optimizer instance's `step` and `minimize` are wrapped to read `p.grad` (or `main_grad`) first; the instance attributes are deleted afterwards")
# hapi's Model runs in dygraph: the trainer has no graph run
OFFERS = Offers(devices=("cpu", "cuda", "ascend"),
                runs=({}, {"mode": "graph", "backend": "to_static"}, {"mode": "graph", "backend": "static"},
                      {"api": "trainer"}, {"replicas": "2"}, {"api": "trainer", "replicas": "2"},
                      {"mode": "graph", "backend": "to_static", "replicas": "2"}))
