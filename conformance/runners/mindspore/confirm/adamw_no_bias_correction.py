"""adamw-no-bias-correction

MindSpore: nn.AdamWeightDecay (what torch.optim.AdamW maps to) has no bias correction and decays
lr-scaled: w -= lr * (m / (sqrt(v) + eps) + wd * w), so its first step is about (1 - beta1) /
sqrt(1 - beta2) times AdamW's for large gradients. The reference semantics (AdamW) correct the moments'
bias by 1 - beta^t.

Upstream: https://www.mindspore.cn/docs/en/stable/api_python/nn/mindspore.nn.AdamWeightDecay.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn, Parameter, Tensor  # noqa: E402


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones(4, np.float32)), name="w")


def test_adamweightdecay_step_has_no_bias_correction():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    lr, b1, b2, eps, wd = 0.05, 0.9, 0.999, 1e-8, 0.1
    g = np.array([0.3, -0.2, 1e-3, 2.0], np.float32)
    net = Net()
    opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=lr, beta1=b1, beta2=b2, eps=eps, weight_decay=wd)
    opt((Tensor(g),))
    got, w0 = net.w.asnumpy().astype(np.float64), np.ones(4)
    m, v = (1 - b1) * g.astype(np.float64), (1 - b2) * g.astype(np.float64) ** 2
    documented = w0 - lr * (m / (np.sqrt(v) + eps) + wd * w0)
    torch_adamw = w0 * (1 - lr * wd) - lr * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps)  # the reference
    print(f"one step from w = 1: mindspore {got}, no bias correction {documented}, AdamW {torch_adamw}")
    assert np.allclose(got, documented, rtol=1e-5)
    assert not np.allclose(got, torch_adamw, rtol=1e-3)


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_adamweightdecay_step_has_no_bias_correction()
    print("confirmed: adamw-no-bias-correction")
