"""Seed 4 (a Paddle Fluid report) ported to MindSpore: a conv + BatchNorm net trained with weight
decay. MindSpore keeps BatchNorm's moving_mean and moving_variance as Parameters with
requires_grad=False: net.get_parameters() returns them, net.trainable_params() does not.

    python -m conformance audit examples/audit/mindspore/seed4_batchnorm_decay.py:build --framework mindspore

- build: nn.Momentum(net.trainable_params(), ..., weight_decay=5e-5), the usual MindSpore code. The
  optimizer never holds the moving statistics, and its default rule (no decay for names containing
  'beta' or 'gamma') leaves BatchNorm's own gamma and beta undecayed. Expected: no finding.
- get_parameters: the same optimizer built from net.get_parameters(), Fluid's situation: the
  moving statistics are in the optimizer (statistics-in-optimizer). value_and_grad hands them zero
  gradients (functional-zero-filled-grads) and the decay and momentum move them beside BatchNorm's
  own update; their names hold neither beta nor gamma, so they are decayed.
"""
import numpy as np

import mindspore as ms
from mindspore import nn


def _build(params):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = nn.SequentialCell([nn.Conv2d(3, 8, 3, pad_mode="pad", padding=1, has_bias=True), nn.BatchNorm2d(8),
                             nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dense(8, 10)])
    optimizer = nn.Momentum(params(net), learning_rate=0.1, momentum=0.9, weight_decay=5e-5)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    images = ms.Tensor(rng.normal(size=(8, 3, 8, 8)).astype(np.float32))
    labels = ms.Tensor(np.arange(8) % 10, ms.int32)

    def forward_fn(data, label):
        return loss_fn(net(data), label)

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

    def step():
        net.set_train()
        loss, grads = grad_fn(images, labels)
        optimizer(grads)
        return loss

    return {"model": net, "optimizer": optimizer, "step": step}


def build():
    return _build(lambda net: net.trainable_params())


def get_parameters():
    return _build(lambda net: net.get_parameters())
