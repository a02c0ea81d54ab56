"""A clean, realistic paddle model: a small ResNet in paddle's own containers (nn.Sequential of
residual blocks with BatchNorm), Momentum with L2Decay, the usual loop. Expected: no finding.

The optimizer gets the trainable parameters only. Built from model.parameters(), it would also hold
every BatchNorm's running _mean and _variance, which paddle keeps as Parameters with
stop_gradient=True (statistics-in-optimizer, bn-stats-in-parameters): harmless in dygraph, where the
step skips them, but the regularizer covers them and a static program appends its decay ops for them
(seed 4).

    python -m conformance audit examples/audit/paddle/clean_resnet.py:build --framework paddle
"""
import paddle
from paddle import nn
from paddle.nn import functional as F


class Block(nn.Layer):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2D(cin, cout, 3, stride, 1, bias_attr=False)
        self.bn1 = nn.BatchNorm2D(cout)
        self.conv2 = nn.Conv2D(cout, cout, 3, 1, 1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2D(cin, cout, 1, stride, bias_attr=False), nn.BatchNorm2D(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet(nn.Layer):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(3, 16, 3, 1, 1, bias_attr=False), nn.BatchNorm2D(16), nn.ReLU())
        self.stages = nn.Sequential(Block(16, 16), Block(16, 32, 2), Block(32, 64, 2))
        self.head = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.head(paddle.flatten(F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1), 1))


def build():
    paddle.seed(0)
    model = ResNet()
    trainable = [p for p in model.parameters() if p.trainable]  # not the BatchNorm statistics
    optimizer = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=trainable,
                                          weight_decay=paddle.regularizer.L2Decay(5e-4))
    images, labels = paddle.randn([8, 3, 16, 16]), paddle.arange(8) % 10

    def step():
        model.train()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()
        optimizer.clear_grad()

    return {"model": model, "optimizer": optimizer, "step": step}
