"""conv-default-no-bias

MindSpore: nn.Conv2d(in_channels, out_channels, kernel_size, ..., has_bias=False, ...): built without
has_bias it has no bias Parameter, so code ported from torch (whose Conv2d has bias=True) trains a
convolution without one, and a checkpoint's bias has nowhere to go. nn.Dense keeps has_bias=True. The
reference semantics give a Conv2d a bias unless it is built with bias=False.

Upstream: https://www.mindspore.cn/docs/en/r2.4.0/api_python/nn/mindspore.nn.Conv2d.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode="pad", padding=1)  # has_bias left out, as torch code leaves bias
        self.fc = nn.Dense(2, 1)  # has_bias left out too

    def construct(self, x):
        return self.fc(self.conv(x).mean(axis=(2, 3)))


def test_conv_without_has_bias_has_no_bias():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = Net()
    names = [p.name for p in net.trainable_params()]
    zero = net.conv(ms.Tensor(np.zeros((1, 1, 4, 4), np.float32))).asnumpy()
    print(f"nn.Conv2d(1, 2, 3) built without has_bias: bias {net.conv.bias}, has_bias {net.conv.has_bias}; "
          f"trainable parameters {names}; its output on a zero image {np.unique(zero)} (a bias would show); "
          f"nn.Dense(2, 1) bias {net.fc.bias is not None}")
    assert net.conv.bias is None and not net.conv.has_bias and "conv.bias" not in names
    assert not np.any(zero)
    assert net.fc.bias is not None


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_conv_without_has_bias_has_no_bias()
    print("confirmed: conv-default-no-bias")
