"""A clean, realistic MindSpore model: a small ResNet in MindSpore's own containers (nn.SequentialCell
of residual blocks with BatchNorm2d), nn.Momentum with weight decay on net.trainable_params() (its
default rule leaves BatchNorm's gamma and beta undecayed), the tutorials' value_and_grad loop.
Expected: no finding.

    python -m conformance audit examples/audit/mindspore/clean_resnet.py:build --framework mindspore
"""
import numpy as np

import mindspore as ms
from mindspore import nn, ops


def conv(cin, cout, k, stride=1):
    return nn.Conv2d(cin, cout, k, stride=stride, pad_mode="pad", padding=k // 2, has_bias=False)


class Block(nn.Cell):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = conv(cin, cout, 3, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = conv(cout, cout, 3)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.SequentialCell([conv(cin, cout, 1, stride), nn.BatchNorm2d(cout)])

    def construct(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class ResNet(nn.Cell):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.SequentialCell([conv(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU()])
        self.stages = nn.SequentialCell([Block(16, 16), Block(16, 32, 2), Block(32, 64, 2)])
        self.head = nn.Dense(64, num_classes)

    def construct(self, x):
        return self.head(ops.mean(self.stages(self.stem(x)), (2, 3)))


def build():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = ResNet()
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    images = ms.Tensor(rng.normal(size=(8, 3, 16, 16)).astype(np.float32))
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
