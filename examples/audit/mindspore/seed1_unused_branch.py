"""Seed 1 (a Paddle report) ported to MindSpore: a CIFAR net whose construct uses conv1 on even
batches and conv2 on odd ones, trained with nn.SGD(learning_rate=0.1, weight_decay=5e-4) the
MindSpore tutorials' way (`ms.value_and_grad(forward_fn, None, optimizer.parameters)`, then
`optimizer(grads)`). value_and_grad returns a gradient for every parameter the optimizer holds,
zeros for the branch the step left out (functional-zero-filled-grads), and SGD decays it: both
branches move in the steps that do not use them, the Paddle report's behaviour
(moved-without-gradient).

    python -m conformance audit examples/audit/mindspore/seed1_unused_branch.py:build --framework mindspore
"""
import numpy as np

import mindspore as ms
from mindspore import nn, ops


class CIFAR(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, pad_mode="pad", padding=1, has_bias=True)
        self.conv2 = nn.Conv2d(3, 8, 3, pad_mode="pad", padding=1, has_bias=True)
        self.fc = nn.Dense(8, 10)

    def construct(self, x, ind):
        x = self.conv1(x) if ind % 2 == 0 else self.conv2(x)
        return self.fc(ops.mean(x, (2, 3)))  # global average pooling


def build():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = CIFAR()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    images = ms.Tensor(rng.normal(size=(4, 3, 16, 16)).astype(np.float32))
    labels = ms.Tensor(np.array([0, 1, 2, 3], np.int32))
    batch = [0]

    def forward_fn(data, label, ind):
        return loss_fn(net(data, ind), label)

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

    def step():
        net.set_train()
        loss, grads = grad_fn(images, labels, batch[0])
        optimizer(grads)
        batch[0] += 1
        return loss

    return {"model": net, "optimizer": optimizer, "step": step}
