"""The jax room (flax nnx + optax). runner.py: the adapter (an nnx.Module, nnx.value_and_grad, an
nnx.Optimizer over an optax transformation); graph.py: --mode graph (nnx.jit around the gradient and the
update); trainer.py: why there is no --api trainer; audit.py: why there is no probe of `audit` yet; known.yaml: its
semantic profile; expected.yaml: its outcomes that are neither conform nor documented; confirm/: one
standalone snippet per variant; tests/: the adapter held to hand-written flax/optax code."""
from ..base import Offers
from .trainer import NO_TRAINER

ADAPTER = "conformance.runners.jax.runner:JaxRunner"
# no AUDIT yet: the room has no probe of `audit` (its audit.py says so)
OFFERS = Offers(devices=("cpu", "cuda"),
                runs=({}, {"mode": "graph", "backend": "jit"}),
                refused={"api=trainer": NO_TRAINER})
