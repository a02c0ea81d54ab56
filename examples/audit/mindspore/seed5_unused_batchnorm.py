"""Seed 5 (a TensorFlow question) ported to MindSpore: a layer that normalises its input with a
BatchNorm whose output is then not used (the report's first, discarded BatchNormalization call),
next to the BatchNorm that is. The discarded one's gamma and beta get no gradient: value_and_grad
hands them zeros, since the loss does not depend on them (no-gradient). nn.Adam without weight decay
leaves a parameter with zero gradients and zero moments in place, so nothing moves without a gradient.

    python -m conformance audit examples/audit/mindspore/seed5_unused_batchnorm.py:build --framework mindspore
"""
import numpy as np

import mindspore as ms
from mindspore import nn, ops


class Actor(nn.Cell):
    def __init__(self, n_in=4, hidden=32, n_out=2):
        super().__init__()
        self.input_norm = nn.BatchNorm1d(n_in)  # its output is discarded in construct
        self.layer_1 = nn.Dense(n_in, hidden)
        self.norm_1 = nn.BatchNorm1d(hidden)
        self.action = nn.Dense(hidden, n_out)
        self.dropout = nn.Dropout(p=0.1)

    def construct(self, x):
        self.input_norm(x)  # computed, then not used
        y = ops.leaky_relu(self.norm_1(self.layer_1(x)))
        return self.action(self.dropout(y))


def build():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = Actor()
    optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)
    loss_fn = nn.MSELoss()
    rng = np.random.default_rng(0)
    states = ms.Tensor(rng.normal(size=(16, 4)).astype(np.float32))
    actions = ms.Tensor(rng.normal(size=(16, 2)).astype(np.float32))

    def forward_fn(data, label):
        return loss_fn(net(data), label)

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

    def step():
        net.set_train()
        loss, grads = grad_fn(states, actions)
        optimizer(grads)
        return loss

    return {"model": net, "optimizer": optimizer, "step": step}
