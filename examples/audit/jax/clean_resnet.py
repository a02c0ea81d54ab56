"""A clean, realistic flax nnx model: a small ResNet in flax's own containers (nnx.Sequential, residual
blocks in an nnx.List, nnx.BatchNorm), SGD with momentum and weight decay the optax way
(optax.chain(optax.add_decayed_weights(5e-4), optax.sgd(0.1, momentum=0.9))) over nnx.Param, the flax
guides' step. Expected: no finding.

    python -m conformance audit examples/audit/jax/clean_resnet.py:build --framework jax
"""
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


def conv(cin, cout, k, rngs, stride=1):
    return nnx.Conv(cin, cout, (k, k), strides=stride, padding="SAME", use_bias=False, rngs=rngs)


class Block(nnx.Module):
    def __init__(self, cin, cout, rngs, stride=1):
        self.conv1 = conv(cin, cout, 3, rngs, stride)
        self.bn1 = nnx.BatchNorm(cout, rngs=rngs)
        self.conv2 = conv(cout, cout, 3, rngs)
        self.bn2 = nnx.BatchNorm(cout, rngs=rngs)
        # one assignment: an attribute first set to None is static, and flax refuses a module there later
        self.shortcut = nnx.Sequential(conv(cin, cout, 1, rngs, stride), nnx.BatchNorm(cout, rngs=rngs)) \
            if stride != 1 or cin != cout else None

    def __call__(self, x):
        y = nnx.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return nnx.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class ResNet(nnx.Module):
    def __init__(self, rngs, num_classes=10):
        self.stem = nnx.Sequential(conv(3, 16, 3, rngs), nnx.BatchNorm(16, rngs=rngs), nnx.relu)
        self.stages = nnx.List([Block(16, 16, rngs), Block(16, 32, rngs, 2), Block(32, 64, rngs, 2)])
        self.head = nnx.Linear(64, num_classes, rngs=rngs)

    def __call__(self, x):
        x = self.stem(x)
        for block in self.stages:
            x = block(x)
        return self.head(jnp.mean(x, (1, 2)))


def build():
    model = ResNet(nnx.Rngs(0))
    tx = optax.chain(optax.add_decayed_weights(5e-4), optax.sgd(0.1, momentum=0.9))
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.normal(size=(8, 16, 16, 3)), jnp.float32)
    labels = jnp.arange(8) % 10

    def loss_fn(model, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()

    def step():
        model.train()
        loss, grads = nnx.value_and_grad(loss_fn)(model, images, labels)
        optimizer.update(model, grads)
        return loss

    return {"model": model, "optimizer": optimizer, "step": step}
