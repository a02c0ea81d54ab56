"""Seed 4 (a Paddle Fluid report) in today's paddle API: a conv + BatchNorm net trained with L2 weight
decay. paddle's BatchNorm keeps its running mean and variance as Parameters (stop_gradient=True), so
model.parameters() returns them and the optimizer built from it holds them, its L2Decay covering them
as every other parameter it holds (statistics-in-optimizer, bn-stats-in-parameters). In dygraph the
step skips them (stop_gradient=True), so the decay never reaches them: they move only by the forward
pass in train mode, as they should.

    python -m conformance audit examples/audit/paddle/seed4_batchnorm_decay.py:build --framework paddle
"""
import paddle
from paddle import nn


def build():
    paddle.seed(0)
    model = nn.Sequential(nn.Conv2D(3, 8, 3, padding=1), nn.BatchNorm2D(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(8, 10))
    optimizer = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model.parameters(),
                                          weight_decay=paddle.regularizer.L2Decay(5e-5))
    images, labels = paddle.randn([8, 3, 8, 8]), paddle.arange(8) % 10

    def step():
        model.train()
        nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
        optimizer.clear_grad()

    return {"model": model, "optimizer": optimizer, "step": step}
