"""The jax room (flax nnx + optax). runner.py: the adapter (an nnx.Module, nnx.value_and_grad, an
nnx.Optimizer over an optax transformation); graph.py: --mode graph (nnx.jit around the gradient and the
update); trainer.py: why there is no --api trainer; audit.py: the probe of `audit` (eager steps); known.yaml: its
semantic profile; expected.yaml: its outcomes that are neither conform nor documented; confirm/: one
standalone snippet per variant; tests/: the adapter held to hand-written flax/optax code."""
from ..base import Offers
from .trainer import NO_TRAINER

ADAPTER = "conformance.runners.jax.runner:JaxRunner"
AUDIT = "conformance.runners.jax.audit:JaxProbe"  # python -m conformance audit
# how its probe reads gradients before the update (docs/audit.md)
AUDIT_READS = ("eager steps only: the optimizer instance gets a subclass of its class whose `update` reads the gradient State it is handed (`optimizer.update(model, grads)`), filtered by the optimizer's `wrt` as the update filters it; its class is put back afterwards; an update compiled under `nnx.jit` or `jax.jit` is refused in one line")
# nnx.jit is the main run, as JAX users train; eager runs the smoke subset
OFFERS = Offers(devices=("cpu", "cuda"),
                runs=({"mode": "graph", "backend": "jit"}, {}),
                refused={"api=trainer": NO_TRAINER},
                smoke=({},),
                smoke_why=("eager JAX dispatches every operation as its own XLA computation, compiled op by op, which "
                           "JAX is not tuned for (https://github.com/jax-ml/jax/issues/427: high dispatch overheads); "
                           "JAX users compile their train step with jit, so nnx.jit runs the whole spec"))
