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
# hapi's Model runs in dygraph: the trainer has no graph run
OFFERS = Offers(devices=("cpu", "cuda", "ascend"),
                runs=({}, {"mode": "graph", "backend": "to_static"}, {"mode": "graph", "backend": "static"},
                      {"api": "trainer"}, {"replicas": "2"}, {"api": "trainer", "replicas": "2"},
                      {"mode": "graph", "backend": "to_static", "replicas": "2"}))
