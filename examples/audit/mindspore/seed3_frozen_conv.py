"""Seed 3 (a MindSpore article: 如何实现梯度不回传以及梯度回传后不更新权重功能) in PyNative: the
article's PrintDemo net (conv1 4x4 without bias, conv2, conv3; its Print op left out) whose conv1 is
kept from training. The article's claim is that either way conv1's weight stays as it was. Trained
here the MindSpore tutorials' way: `grad_fn = ms.value_and_grad(forward_fn, None,
optimizer.parameters)`, then `optimizer(grads)`, with nn.Momentum(learning_rate=0.01, momentum=0.9,
weight_decay=1e-4), MindSpore's usual Momentum recipe. The article sets GRAPH_MODE on Ascend; the
audit reads PyNative steps. Each function is one audit target:

    python -m conformance audit examples/audit/mindspore/seed3_frozen_conv.py:stop_gradient --framework mindspore

- stop_gradient: ops.stop_gradient after conv1 (the article's first way). value_and_grad still
  returns a gradient for conv1.weight, all zeros (functional-zero-filled-grads), and the optimizer's
  weight decay moves it every step: moved-without-gradient, and no-gradient. Without weight decay it
  would stay put, as the article says.
- requires_grad_false: conv1.weight.requires_grad = False, then the optimizer built from
  net.trainable_params(), as the article does. trainable_params() leaves conv1 out, so the
  optimizer never sees it: no finding.
- optimizer_before_freezing: the optimizer built from net.trainable_params() first, conv1 frozen
  after. The optimizer still holds conv1.weight; PyNative's value_and_grad hands it zeros
  (functional-zero-filled-grads) and the decay moves it: frozen-but-moved.
- freeze_after_warmup: conv1 trains for one step, then is frozen. Its zero gradients from then on do
  not stop the momentum buffer of the warm-up step (and the decay) from moving it: frozen-but-moved.
"""
import numpy as np

import mindspore as ms
from mindspore import nn, ops


class PrintDemo(nn.Cell):
    def __init__(self, stop=False):
        super().__init__()
        self.stop = stop
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=6, kernel_size=4, stride=1, has_bias=False,
                               weight_init="normal", pad_mode="valid")
        self.conv2 = nn.Conv2d(in_channels=6, out_channels=2, kernel_size=2, pad_mode="valid")
        self.conv3 = nn.Conv2d(in_channels=2, out_channels=6, kernel_size=2, pad_mode="valid")

    def construct(self, input_data):
        x = self.conv1(input_data)
        if self.stop:
            x = ops.stop_gradient(x)
        x = self.conv2(x)
        return self.conv3(x)


def _optimizer(net):
    return nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9, weight_decay=1e-4)


def _target(net, optimizer):
    input_data = ms.Tensor(np.ones([1, 1, 32, 32]), ms.float32)
    label = ms.Tensor(np.zeros([1, 6, 27, 27]), ms.float32)
    loss_fn = nn.MSELoss()

    def forward_fn(data, label):
        return loss_fn(net(data), label)

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

    def step():
        net.set_train()
        loss, grads = grad_fn(input_data, label)
        optimizer(grads)
        return loss

    return {"model": net, "optimizer": optimizer, "step": step}


def _net(stop=False):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    return PrintDemo(stop)


def stop_gradient():
    net = _net(stop=True)
    return _target(net, _optimizer(net))


def requires_grad_false():
    net = _net()
    for param in net.trainable_params():  # the article's loop
        param.requires_grad = "conv1" not in param.name
    return _target(net, _optimizer(net))


def optimizer_before_freezing():
    net = _net()
    optimizer = _optimizer(net)
    net.conv1.weight.requires_grad = False
    return _target(net, optimizer)


def freeze_after_warmup():
    net = _net()
    built = _target(net, _optimizer(net))
    built["step"]()  # the warm-up step, conv1 still training
    net.conv1.weight.requires_grad = False
    return built
