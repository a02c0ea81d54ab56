"""Seed 2 (a Paddle report) ported to flax nnx: a ResNet whose residual blocks sit in a plain Python
list inside a hand-written Sequential. flax 0.12 refuses it: a plain list, dict or tuple attribute of
an nnx.Module is static, and assigning one that holds modules raises ("Found data on value of type
<class 'list'> assigned to static attribute 'layers'"), so the seed-2 bug is loud in JAX
(plain-containers-unregistered does not hold there; the room's test_audit.py holds that error).

- build: the port as written, `self.layers = layers`. build() raises that ValueError, and the audit
  stops with exit status 2 and one line (the file is an audit target only to show what a user hits).
- nnx_list: the fix flax's message offers first for a list, `self.layers = nnx.List(layers)`: every
  block is in the model's graph, its optimizer and its train()/eval(). Expected: no finding.

    python -m conformance audit examples/audit/jax/seed2_plain_list_resnet.py:nnx_list --framework jax
"""
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Sequential(nnx.Module):
    def __init__(self, layers: list, wrap=lambda layers: layers):
        self.layers = wrap(layers)  # a plain list: flax raises here

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Residual(nnx.Module):
    def __init__(self, in_channels, out_channels, rngs, use_1x1_conv=False, stride=1):
        self.conv1 = nnx.Conv(in_channels, out_channels, (3, 3), strides=stride, padding="SAME", rngs=rngs)
        self.conv2 = nnx.Conv(out_channels, out_channels, (3, 3), padding="SAME", rngs=rngs)
        self.conv3 = nnx.Conv(in_channels, out_channels, (1, 1), strides=stride, rngs=rngs) if use_1x1_conv else None
        self.bn1 = nnx.BatchNorm(out_channels, rngs=rngs)
        self.bn2 = nnx.BatchNorm(out_channels, rngs=rngs)

    def __call__(self, x):
        y = nnx.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.conv3 is not None:
            x = self.conv3(x)
        return nnx.relu(y + x)


def resnet_block(in_channels, out_channels, num_residuals, rngs, wrap, first_block=False):
    blk = []
    for i in range(num_residuals):
        if i == 0 and not first_block:
            blk.append(Residual(in_channels, out_channels, rngs, use_1x1_conv=True, stride=2))
        else:
            blk.append(Residual(out_channels, out_channels, rngs))
    return Sequential(blk, wrap)


class ResNet(nnx.Module):
    def __init__(self, rngs, wrap, in_channels=1, num_classes=10):
        self.stem = nnx.Sequential(nnx.Conv(in_channels, 8, (3, 3), padding="SAME", rngs=rngs),
                                   nnx.BatchNorm(8, rngs=rngs), nnx.relu)
        self.block1 = resnet_block(8, 8, 2, rngs, wrap, first_block=True)
        self.block2 = resnet_block(8, 16, 2, rngs, wrap)
        self.fc = nnx.Linear(16, num_classes, rngs=rngs)

    def __call__(self, x):
        x = self.block2(self.block1(self.stem(x)))
        return self.fc(jnp.mean(x, (1, 2)))


def build(wrap=lambda layers: layers):
    model = ResNet(nnx.Rngs(0), wrap)
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.normal(size=(8, 16, 16, 1)), jnp.float32)
    labels = jnp.arange(8) % 10

    def loss_fn(model, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()

    def step():
        model.train()
        loss, grads = nnx.value_and_grad(loss_fn)(model, images, labels)
        optimizer.update(model, grads)
        return loss

    return {"model": model, "optimizer": optimizer, "step": step}


def nnx_list():
    return build(wrap=nnx.List)
