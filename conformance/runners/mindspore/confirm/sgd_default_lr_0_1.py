"""sgd-default-lr-0.1

MindSpore: nn.SGD(params) built without learning_rate steps with 0.1 (nn.Momentum has no default: its
learning_rate is a required argument). The reference semantics' default learning rate is 1e-3.

Upstream: https://www.mindspore.cn/docs/en/br_base/api_python/nn/mindspore.nn.SGD.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(2, 1, has_bias=False, weight_init=ms.Tensor(np.array([[1.0, -2.0]], np.float32)))


def test_sgd_without_learning_rate_steps_with_0_1():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = Net()
    w0 = net.fc.weight.asnumpy().copy()
    g = np.array([[0.5, 0.25]], np.float32)
    sgd = nn.SGD(net.trainable_params())  # learning_rate left out
    sgd((ms.Tensor(g),))
    moved = w0 - net.fc.weight.asnumpy()
    try:
        nn.Momentum(net.trainable_params(), momentum=0.9)
        momentum = "builds"
    except TypeError:
        momentum = "TypeError (learning_rate required)"
    print(f"SGD learning_rate {sgd.learning_rate.asnumpy()}; one step with gradient {g} moved w by {moved} "
          f"(0.1 * g; the reference 1e-3 * g); nn.Momentum without learning_rate: {momentum}")
    assert np.allclose(moved, 0.1 * g)


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_sgd_without_learning_rate_steps_with_0_1()
    print("confirmed: sgd-default-lr-0.1")
