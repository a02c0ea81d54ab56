"""Seed 2 (a Paddle report) ported to MindSpore: a ResNet whose residual blocks sit in a plain Python
list inside a hand-written Sequential. MindSpore registers only Cells assigned as attributes or held
in nn.SequentialCell / nn.CellList / nn.CellDict, so net.trainable_params() misses every block: the
optimizer never holds them and they never train (unregistered, plain-containers-unregistered). And
net.set_train() does not reach them either: a Cell starts in inference mode, so their BatchNorms
normalize with the initial moving statistics and never update them (mode-mismatch,
plain-contained-layers-stay-eval).

`finetune_in_eval` is the same model fine-tuned with its BatchNorm statistics frozen the common way,
net.set_train(False) before the steps. The blocks were never in train mode, so here they agree with
the model and their statistics stay put: only `unregistered` remains (torch's blocks start in train
mode, stay there, and their statistics move).

    python -m conformance audit examples/audit/mindspore/seed2_plain_list_resnet.py:build --framework mindspore
"""
import numpy as np

import mindspore as ms
from mindspore import nn, ops


class Sequential(nn.Cell):
    def __init__(self, layers: list):
        super().__init__()
        self.layers = layers  # a plain list: not registered

    def construct(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Residual(nn.Cell):
    def __init__(self, in_channels, out_channels, use_1x1_conv=False, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, pad_mode="pad", padding=1, has_bias=True)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, pad_mode="pad", padding=1, has_bias=True)
        self.conv3 = nn.Conv2d(in_channels, out_channels, 1, stride=stride, has_bias=True) if use_1x1_conv else None
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()

    def construct(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.conv3 is not None:
            x = self.conv3(x)
        return self.relu(y + x)


def resnet_block(in_channels, out_channels, num_residuals, first_block=False):
    blk = []
    for i in range(num_residuals):
        if i == 0 and not first_block:
            blk.append(Residual(in_channels, out_channels, use_1x1_conv=True, stride=2))
        else:
            blk.append(Residual(out_channels, out_channels))
    return Sequential(blk)


class ResNet(nn.Cell):
    def __init__(self, in_channels=1, num_classes=10):
        super().__init__()
        self.stem = nn.SequentialCell([nn.Conv2d(in_channels, 8, 3, pad_mode="pad", padding=1, has_bias=True),
                                       nn.BatchNorm2d(8), nn.ReLU()])
        self.block1 = resnet_block(8, 8, 2, first_block=True)
        self.block2 = resnet_block(8, 16, 2)
        self.fc = nn.Dense(16, num_classes)

    def construct(self, x):
        x = self.block2(self.block1(self.stem(x)))
        return self.fc(ops.mean(x, (2, 3)))


def build(train=True):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = ResNet()
    optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    images = ms.Tensor(rng.normal(size=(8, 1, 16, 16)).astype(np.float32))
    labels = ms.Tensor(np.arange(8) % 10, ms.int32)

    def forward_fn(data, label):
        return loss_fn(net(data), label)

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

    def step():
        net.set_train(train)  # False: freeze every BatchNorm's statistics while fine-tuning
        loss, grads = grad_fn(images, labels)
        optimizer(grads)
        return loss

    return {"model": net, "optimizer": optimizer, "step": step}


def finetune_in_eval():
    return build(train=False)
