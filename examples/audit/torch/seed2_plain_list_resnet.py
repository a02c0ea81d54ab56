"""Seed 2 (a Paddle report) ported to torch: a ResNet whose residual blocks sit in a plain Python
list inside a hand-written Sequential. torch registers only modules assigned as attributes or held
in nn.ModuleList / nn.Sequential / nn.ModuleDict, so model.parameters() misses every block: the
optimizer never holds them and they never train (pytorch/pytorch#72580).

`finetune_in_eval` is the same model fine-tuned with its BatchNorm statistics frozen the common way,
model.eval() before the steps: eval() does not reach the blocks either, so they stay in train mode
and their statistics keep moving.

    python -m conformance audit examples/audit/torch/seed2_plain_list_resnet.py:build --framework torch
"""
import torch
from torch import nn
from torch.nn import functional as F


class Sequential(nn.Module):
    def __init__(self, layers: list):
        super().__init__()
        self.layers = layers  # a plain list: not registered

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Residual(nn.Module):
    def __init__(self, in_channels, out_channels, use_1x1_conv=False, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1, stride=stride)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.conv3 = nn.Conv2d(in_channels, out_channels, 1, stride=stride) if use_1x1_conv else None
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.bn2 = nn.BatchNorm2d(out_channels)

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


class ResNet(nn.Module):
    def __init__(self, in_channels=1, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_channels, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.block1 = resnet_block(8, 8, 2, first_block=True)
        self.block2 = resnet_block(8, 16, 2)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.block2(self.block1(self.stem(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def build():
    torch.manual_seed(0)
    model = ResNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    images, labels = torch.randn(8, 1, 16, 16), torch.arange(8) % 10

    def step():
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "step": step}


def finetune_in_eval():
    built = build()
    built["model"].eval()  # freeze every BatchNorm's statistics while fine-tuning
    optimizer, model = built["optimizer"], built["model"]
    images, labels = torch.randn(8, 1, 16, 16), torch.arange(8) % 10

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "step": step}
