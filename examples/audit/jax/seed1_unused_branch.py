"""Seed 1 (a Paddle report) ported to flax nnx: a CIFAR net whose __call__ uses conv1 on even batches
and conv2 on odd ones, trained with SGD and weight decay the optax way
(optax.chain(optax.add_decayed_weights(5e-4), optax.sgd(0.1))), the flax guides' step:
`loss, grads = nnx.value_and_grad(loss_fn)(model, ...)`, then `optimizer.update(model, grads)`.
nnx.value_and_grad returns an array for every Param, zeros for the branch the step left out
(functional-zero-filled-grads), and add_decayed_weights decays it: both branches move in the steps
that do not use them, the Paddle report's behaviour (moved-without-gradient).

    python -m conformance audit examples/audit/jax/seed1_unused_branch.py:build --framework jax
"""
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class CIFAR(nnx.Module):
    def __init__(self, rngs):
        self.conv1 = nnx.Conv(3, 8, (3, 3), padding="SAME", rngs=rngs)
        self.conv2 = nnx.Conv(3, 8, (3, 3), padding="SAME", rngs=rngs)
        self.fc = nnx.Linear(8, 10, rngs=rngs)

    def __call__(self, x, ind):
        x = self.conv1(x) if ind % 2 == 0 else self.conv2(x)
        return self.fc(jnp.mean(x, (1, 2)))  # global average pooling (NHWC)


def build():
    model = CIFAR(nnx.Rngs(0))
    tx = optax.chain(optax.add_decayed_weights(5e-4), optax.sgd(0.1))
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.normal(size=(4, 16, 16, 3)), jnp.float32)
    labels = jnp.array([0, 1, 2, 3])
    batch = [0]

    def loss_fn(model, x, y, ind):
        return optax.softmax_cross_entropy_with_integer_labels(model(x, ind), y).mean()

    def step():
        model.train()
        loss, grads = nnx.value_and_grad(loss_fn)(model, images, labels, batch[0])
        optimizer.update(model, grads)
        batch[0] += 1
        return loss

    return {"model": model, "optimizer": optimizer, "step": step}
