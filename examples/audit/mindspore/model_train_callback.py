"""The audit inside MindSpore's Model.train (PyNative, no dataset sink): seed 1's model (a layer the forward pass
skips) trained with Momentum and weight decay, with a callback that audits the first 3 steps and prints the
findings.

    python examples/audit/mindspore/model_train_callback.py
"""
import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.train import Model

from conformance.callbacks.mindspore import AuditCallback


class Net(nn.Cell):
    """A second layer that the forward pass skips (`use_second` False)."""

    def __init__(self, use_second=False):
        super().__init__()
        self.first, self.second, self.use_second = nn.Dense(4, 4), nn.Dense(4, 4), use_second

    def construct(self, x):
        h = self.first(x)
        return self.second(h) if self.use_second else h


def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 4)).astype("float32")


def parts(use_second=False):
    """(network, optimizer): Momentum with weight decay."""
    ms.set_seed(0)
    net = Net(use_second)
    return net, nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9, weight_decay=0.01)


def train(callbacks, use_second=False, epochs=2) -> Net:
    import mindspore.dataset as ds
    net, optimizer = parts(use_second)
    x, y = data()
    batches = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)
    Model(net, nn.MSELoss(), optimizer).train(epochs, batches, callbacks=callbacks, dataset_sink_mode=False)
    return net


if __name__ == "__main__":
    ms.set_context(mode=ms.PYNATIVE_MODE)
    train([AuditCallback(steps=3)])  # prints the findings after the 3rd step
