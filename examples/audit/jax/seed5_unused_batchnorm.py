"""Seed 5 (a TensorFlow question) ported to flax nnx: a layer that normalises its input with a
BatchNorm whose output is then not used (the report's first, discarded BatchNormalization call), next
to the BatchNorm that is. The discarded one's scale and bias get no gradient: nnx.value_and_grad hands
them zeros, since the loss does not depend on them (no-gradient). optax.adam without weight decay
leaves a parameter with zero gradients and zero moments in place, so nothing moves without a gradient.

    python -m conformance audit examples/audit/jax/seed5_unused_batchnorm.py:build --framework jax
"""
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Actor(nnx.Module):
    def __init__(self, rngs, n_in=4, hidden=32, n_out=2):
        self.input_norm = nnx.BatchNorm(n_in, rngs=rngs)  # its output is discarded in __call__
        self.layer_1 = nnx.Linear(n_in, hidden, rngs=rngs)
        self.norm_1 = nnx.BatchNorm(hidden, rngs=rngs)
        self.action = nnx.Linear(hidden, n_out, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x):
        self.input_norm(x)  # computed, then not used
        y = nnx.leaky_relu(self.norm_1(self.layer_1(x)))
        return self.action(self.dropout(y))


def build():
    model = Actor(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    rng = np.random.default_rng(0)
    states = jnp.asarray(rng.normal(size=(16, 4)), jnp.float32)
    actions = jnp.asarray(rng.normal(size=(16, 2)), jnp.float32)

    def loss_fn(model, x, y):
        return jnp.mean((model(x) - y) ** 2)

    def step():
        model.train()
        loss, grads = nnx.value_and_grad(loss_fn)(model, states, actions)
        optimizer.update(model, grads)
        return loss

    return {"model": model, "optimizer": optimizer, "step": step}
