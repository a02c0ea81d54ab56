"""A clean, realistic torch model: a small ResNet in torch's own containers (nn.Sequential of
residual blocks with BatchNorm), SGD with momentum and weight decay, the usual loop. Expected: no finding.

    python -m conformance audit examples/audit/torch/clean_resnet.py:build --framework torch
"""
import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.stages = nn.Sequential(Block(16, 16), Block(16, 32, 2), Block(32, 64, 2))
        self.head = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1).flatten(1))


def build():
    torch.manual_seed(0)
    model = ResNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    images, labels = torch.randn(8, 3, 16, 16), torch.arange(8) % 10

    def step():
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "step": step}
