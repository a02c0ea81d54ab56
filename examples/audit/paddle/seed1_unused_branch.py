"""Seed 1 (Paddle#18838) in today's paddle API: a CIFAR net whose forward uses conv1 on even batches
and conv2 on odd ones, trained with SGD and L2Decay regularization, the loop clearing gradients
paddle's default way. opt.clear_grad() (and model.clear_gradients()) fill each gradient with zeros
instead of dropping it, so the branch left out of a step keeps a zero gradient, the update applies
L2 decay to it, and it moves without a gradient (moved-without-gradient, clear-default-zero-fills):
conv1 from step 2 on, conv2 from step 3 on (before its first use it has no gradient at all).

    python -m conformance audit examples/audit/paddle/seed1_unused_branch.py:build --framework paddle

as_reported: the report's own loop, backward(), opt.minimize(loss), model.clear_gradients(): the same
findings.

    python -m conformance audit examples/audit/paddle/seed1_unused_branch.py:as_reported --framework paddle
"""
import paddle
from paddle import nn


class CIFAR(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2D(3, 8, 3, 1, 1)
        self.conv2 = nn.Conv2D(3, 8, 3, 1, 1)
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x, ind):
        x = self.conv1(x) if ind % 2 == 0 else self.conv2(x)
        return self.fc(paddle.flatten(self.pool(x), 1))


def _built(minimize):
    paddle.seed(0)
    model = CIFAR()
    optimizer = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters(),
                                     weight_decay=paddle.regularizer.L2Decay(5e-4))
    images, labels = paddle.randn([4, 3, 16, 16]), paddle.to_tensor([0, 1, 2, 3])
    batch = [0]

    def step():
        model.train()
        loss = nn.functional.cross_entropy(model(images, batch[0]), labels)
        loss.backward()
        if minimize:
            optimizer.minimize(loss)
            model.clear_gradients()
        else:
            optimizer.step()
            optimizer.clear_grad()
        batch[0] += 1

    return {"model": model, "optimizer": optimizer, "step": step}


def build():
    return _built(minimize=False)


def as_reported():
    return _built(minimize=True)
