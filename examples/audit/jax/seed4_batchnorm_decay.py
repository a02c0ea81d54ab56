"""Seed 4 (a Paddle Fluid report) ported to flax nnx: a conv + BatchNorm net trained with weight decay
(optax.chain(optax.add_decayed_weights(5e-5), optax.sgd(0.1, momentum=0.9))). nnx.BatchNorm keeps its
running mean and var as nnx.BatchStat Variables, not nnx.Param.

    python -m conformance audit examples/audit/jax/seed4_batchnorm_decay.py:build --framework jax

- build: nnx.Optimizer(model, tx, wrt=nnx.Param), the usual flax code: the optimizer never holds the
  running statistics. Expected: no finding.
- all_state: the optimizer over every piece of model state, wrt=nnx.Any(nnx.Param, nnx.BatchStat),
  with the gradient taken over the same filter (optimizer.update needs one per leaf it holds), Fluid's
  situation: the statistics are in the optimizer (statistics-in-optimizer; no variant of the profile
  names it). In these train steps their gradient is zero and the decay and momentum move them beside
  BatchNorm's own update (bn-stats-differentiated).
- all_state_in_eval: the same, fine-tuned with the statistics frozen the common way, model.eval()
  before each step: BatchNorm no longer updates them, but the loss now depends on them, so they get its
  gradient and the optimizer moves them (bn-stats-differentiated): statistics-moved-in-eval too.
"""
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


def _build(wrt, train=True):
    rngs = nnx.Rngs(0)
    model = nnx.Sequential(nnx.Conv(3, 8, (3, 3), padding="SAME", rngs=rngs), nnx.BatchNorm(8, rngs=rngs),
                           nnx.relu, lambda x: jnp.mean(x, (1, 2)), nnx.Linear(8, 10, rngs=rngs))
    tx = optax.chain(optax.add_decayed_weights(5e-5), optax.sgd(0.1, momentum=0.9))
    optimizer = nnx.Optimizer(model, tx, wrt=wrt)
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.normal(size=(8, 8, 8, 3)), jnp.float32)
    labels = jnp.arange(8) % 10

    def loss_fn(model, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()

    grad_fn = nnx.value_and_grad(loss_fn, argnums=nnx.DiffState(0, wrt))

    def step():
        model.train() if train else model.eval()  # eval: freeze BatchNorm's statistics while fine-tuning
        loss, grads = grad_fn(model, images, labels)
        optimizer.update(model, grads)
        return loss

    return {"model": model, "optimizer": optimizer, "step": step}


def build():
    return _build(nnx.Param)


def all_state():
    return _build(nnx.Any(nnx.Param, nnx.BatchStat))


def all_state_in_eval():
    return _build(nnx.Any(nnx.Param, nnx.BatchStat), train=False)
