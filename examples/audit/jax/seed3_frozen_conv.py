"""Seed 3 (a MindSpore article: 如何实现梯度不回传以及梯度回传后不更新权重功能) ported to flax nnx: the
article's PrintDemo net (conv1 4x4 without bias, conv2, conv3) whose conv1 is kept from training. The
article's claim is that either way conv1's kernel stays as it was. Trained with SGD, momentum 0.9 and
weight decay 1e-4 the optax way (optax.chain(optax.add_decayed_weights(1e-4), optax.sgd(0.01,
momentum=0.9))), the flax guides' step. Each function is one audit target:

    python -m conformance audit examples/audit/jax/seed3_frozen_conv.py:stop_gradient --framework jax

- stop_gradient: jax.lax.stop_gradient after conv1 (the article's first way). nnx.value_and_grad still
  returns conv1.kernel's gradient, all zeros (functional-zero-filled-grads), and the decay moves it
  every step: moved-without-gradient, and no-gradient. Without weight decay it would stay put.
- wrt_filter: JAX has no trainable flag; flax freezes by a filter, the same one for the gradient and
  the optimizer (nnx.DiffState(0, trainable), nnx.Optimizer(..., wrt=trainable)). conv1.kernel is a
  Param the optimizer does not hold: not-in-optimizer, which default-collection-skips-frozen explains
  (it is how JAX freezes; conv1 stays put).
- set_to_zero: the optimizer holds conv1 and is handed its gradient, and optax.multi_transform gives
  it optax.set_to_zero() (optax's freeze, step-skips-frozen): the whole chain, decay and momentum
  included, leaves it alone. Expected: no finding.
"""
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class PrintDemo(nnx.Module):
    def __init__(self, rngs, stop=False):
        self.stop = stop
        self.conv1 = nnx.Conv(1, 6, (4, 4), padding="VALID", use_bias=False, rngs=rngs)
        self.conv2 = nnx.Conv(6, 2, (2, 2), padding="VALID", rngs=rngs)
        self.conv3 = nnx.Conv(2, 6, (2, 2), padding="VALID", rngs=rngs)

    def __call__(self, x):
        x = self.conv1(x)
        if self.stop:
            x = jax.lax.stop_gradient(x)
        return self.conv3(self.conv2(x))


def _tx():
    return optax.chain(optax.add_decayed_weights(1e-4), optax.sgd(0.01, momentum=0.9))


def _target(model, optimizer, wrt=nnx.Param):
    x = jnp.ones((1, 32, 32, 1))
    label = jnp.zeros((1, 27, 27, 6))

    def loss_fn(model, x, y):
        return jnp.mean((model(x) - y) ** 2)

    grad_fn = nnx.value_and_grad(loss_fn, argnums=nnx.DiffState(0, wrt))

    def step():
        loss, grads = grad_fn(model, x, label)
        optimizer.update(model, grads)
        return loss

    return {"model": model, "optimizer": optimizer, "step": step}


def stop_gradient():
    model = PrintDemo(nnx.Rngs(0), stop=True)
    return _target(model, nnx.Optimizer(model, _tx(), wrt=nnx.Param))


def wrt_filter():
    model = PrintDemo(nnx.Rngs(0))
    trainable = nnx.All(nnx.Param, nnx.Not(nnx.PathContains("conv1")))
    return _target(model, nnx.Optimizer(model, _tx(), wrt=trainable), trainable)


def set_to_zero():
    model = PrintDemo(nnx.Rngs(0))

    def labels(params):  # "frozen" for conv1's leaves, "trainable" for the others
        return jax.tree_util.tree_map_with_path(
            lambda path, _: "frozen" if "conv1" in jax.tree_util.keystr(path) else "trainable", params)

    tx = optax.multi_transform({"trainable": _tx(), "frozen": optax.set_to_zero()}, labels)
    return _target(model, nnx.Optimizer(model, tx, wrt=nnx.Param))
