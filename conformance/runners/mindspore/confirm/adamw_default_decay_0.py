"""adamw-default-decay-0

MindSpore: nn.AdamWeightDecay(params, learning_rate=...) built without weight_decay does not decay
(weight_decay=0.0). The reference semantics' AdamW default weight_decay is 0.01 (torch.optim.AdamW).

Upstream: https://www.mindspore.cn/docs/en/stable/api_python/nn/mindspore.nn.AdamWeightDecay.html
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


def test_adamweightdecay_without_weight_decay_does_not_decay():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = Net()
    w0 = net.fc.weight.asnumpy().copy()
    opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=0.1)  # weight_decay left out
    for _ in range(3):
        opt((ms.Tensor(np.zeros((1, 2), np.float32)),))  # zero gradients: only decay could move w
    w = net.fc.weight.asnumpy()
    print(f"AdamWeightDecay weight_decay {opt.weight_decay}; after 3 zero-gradient steps with lr 0.1: w {w} "
          f"(decay 0.01, the reference, would give {w0 * (1 - 0.1 * 0.01) ** 3})")
    assert np.array_equal(w, w0)


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_adamweightdecay_without_weight_decay_does_not_decay()
    print("confirmed: adamw-default-decay-0")
