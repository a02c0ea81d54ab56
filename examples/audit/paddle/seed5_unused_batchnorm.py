"""Seed 5 (a TensorFlow question) in paddle: a layer that normalises its input with a BatchNorm whose
output is then not used (the report's first, discarded BatchNormalization call), next to the
BatchNorm that is. The discarded one's weight and bias get no gradient: BatchNorm does not block
backprop, the graph simply does not reach them; their gradient stays None (clear_grad() zero-fills
only a gradient that exists) and Adam without decay leaves them in place (no-gradient).

Both BatchNorms keep their running mean and variance as Parameters, so the Adam built from
model.parameters() holds them (statistics-in-optimizer, bn-stats-in-parameters); paddle's step skips
them (stop_gradient=True).

    python -m conformance audit examples/audit/paddle/seed5_unused_batchnorm.py:build --framework paddle
"""
import paddle
from paddle import nn


class Actor(nn.Layer):
    def __init__(self, n_in=4, hidden=32, n_out=2):
        super().__init__()
        self.input_norm = nn.BatchNorm1D(n_in)   # its output is discarded in forward
        self.layer_1 = nn.Linear(n_in, hidden)
        self.norm_1 = nn.BatchNorm1D(hidden)
        self.action = nn.Linear(hidden, n_out)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        self.input_norm(x)  # computed, then not used
        y = nn.functional.leaky_relu(self.norm_1(self.layer_1(x)))
        return self.action(self.dropout(y))


def build():
    paddle.seed(0)
    model = Actor()
    optimizer = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    states, actions = paddle.randn([16, 4]), paddle.randn([16, 2])

    def step():
        model.train()
        ((model(states) - actions) ** 2).mean().backward()
        optimizer.step()
        optimizer.clear_grad()

    return {"model": model, "optimizer": optimizer, "step": step}
