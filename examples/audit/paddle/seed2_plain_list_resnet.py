"""Seed 2 (a Paddle 1.7 question: a ResNet ported from torch that does not converge) in today's paddle
API: the residual blocks sit in a plain Python list inside a hand-written Sequential layer. paddle
registers only sublayers assigned as attributes or held in LayerList / LayerDict / nn.Sequential, so
model.parameters() misses every block: the optimizer never holds them and they never train
(unregistered, plain-containers-unregistered).

The registered stem's BatchNorm keeps its running mean and variance as Parameters, so the Adam built
from model.parameters() holds them too (statistics-in-optimizer, bn-stats-in-parameters); they have
stop_gradient=True and paddle's step skips them, so it never moves them.

`finetune_in_eval` is the same model fine-tuned with its BatchNorm statistics frozen the common way,
model.eval() before the steps: eval() does not reach the blocks either, so they stay in train mode
and their statistics keep moving (mode-mismatch and statistics-moved-in-eval,
plain-contained-layers-stay-train). The stem's BatchNorm, registered, goes to eval and keeps its
statistics.

    python -m conformance audit examples/audit/paddle/seed2_plain_list_resnet.py:build --framework paddle
    python -m conformance audit examples/audit/paddle/seed2_plain_list_resnet.py:finetune_in_eval --framework paddle
"""
import paddle
from paddle import nn
from paddle.nn import functional as F


class Sequential(nn.Layer):
    def __init__(self, layers: list):
        super().__init__()
        self.layers = layers  # a plain list: not registered

    def __getitem__(self, index):
        return self.layers[index]

    def __len__(self):
        return len(self.layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Residual(nn.Layer):
    def __init__(self, in_channels, out_channels, use_1x1_conv=False, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2D(in_channels, out_channels, 3, padding=1, stride=stride)
        self.conv2 = nn.Conv2D(out_channels, out_channels, 3, padding=1)
        self.conv3 = nn.Conv2D(in_channels, out_channels, 1, stride=stride) if use_1x1_conv else None
        self.bn1 = nn.BatchNorm2D(out_channels)
        self.bn2 = nn.BatchNorm2D(out_channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.conv3 is not None:
            x = self.conv3(x)
        return F.relu(y + x)


def resnet_block(in_channels, out_channels, num_residuals, first_block=False):
    blk = []
    for i in range(num_residuals):
        if i == 0 and not first_block:
            blk.append(Residual(in_channels, out_channels, use_1x1_conv=True, stride=2))
        else:
            blk.append(Residual(out_channels, out_channels))
    return Sequential(blk)


class ResNet(nn.Layer):
    def __init__(self, in_channels=1, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(in_channels, 8, 3, padding=1), nn.BatchNorm2D(8), nn.ReLU())
        self.block1 = resnet_block(8, 8, 2, first_block=True)
        self.block2 = resnet_block(8, 16, 2)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.block2(self.block1(self.stem(x)))
        return self.fc(paddle.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build():
    paddle.seed(0)
    model = ResNet()
    optimizer = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    images, labels = paddle.randn([8, 1, 16, 16]), paddle.arange(8) % 10

    def step():
        model.train()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()
        optimizer.clear_grad()

    return {"model": model, "optimizer": optimizer, "step": step}


def finetune_in_eval():
    built = build()
    built["model"].eval()  # freeze every BatchNorm's statistics while fine-tuning
    optimizer, model = built["optimizer"], built["model"]
    images, labels = paddle.randn([8, 1, 16, 16]), paddle.arange(8) % 10

    def step():
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()
        optimizer.clear_grad()

    return {"model": model, "optimizer": optimizer, "step": step}
