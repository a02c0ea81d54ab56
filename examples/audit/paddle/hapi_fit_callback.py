"""The audit inside PaddlePaddle's high-level API: seed 1's model (a layer the forward pass skips, L2 decay)
fitted by paddle.Model with a callback that audits the first 3 batches and prints the findings.

    python examples/audit/paddle/hapi_fit_callback.py
"""
import numpy as np
import paddle

from conformance.callbacks.paddle import AuditCallback


class Net(paddle.nn.Layer):
    """A second layer that the forward pass skips (`use_second` False)."""

    def __init__(self, use_second=False):
        super().__init__()
        self.first, self.second, self.use_second = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 4), use_second

    def forward(self, x):
        h = self.first(x)
        return self.second(h) if self.use_second else h


class Data(paddle.io.Dataset):
    def __init__(self):
        rng = np.random.default_rng(0)
        self.x, self.y = rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 4)).astype("float32")

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


def prepared(use_second=False):
    """(paddle.Model, its network, its optimizer): Momentum with L2 decay, MSE."""
    paddle.seed(0)
    net = Net(use_second)
    model = paddle.Model(net)
    optimizer = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=net.parameters(),
                                          weight_decay=paddle.regularizer.L2Decay(0.01))
    model.prepare(optimizer, paddle.nn.MSELoss())
    return model, net, optimizer


def train(callbacks, use_second=False, epochs=2) -> Net:
    model, net, _ = prepared(use_second)
    model.fit(Data(), batch_size=8, epochs=epochs, callbacks=callbacks, verbose=0, shuffle=False)
    return net


if __name__ == "__main__":
    train([AuditCallback(steps=3)])  # prints the findings after the 3rd batch
