"""adam-epsilon-hat

MindSpore: nn.Adam runs the Adam primitive, which folds the bias correction into the learning rate and
adds eps to sqrt(v) uncorrected ("epsilon hat"): step = lr * sqrt(1 - beta2^t) / (1 - beta1^t) *
m / (sqrt(v) + eps). The reference semantics add eps to sqrt(v_hat), after the bias correction
(torch.optim.Adam); the two differ where a gradient element is small next to eps / sqrt(1 - beta2^t).

Upstream: https://mindspore.cn/docs/en/master/api_python/ops/mindspore.ops.Adam.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn, Parameter, Tensor  # noqa: E402


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.zeros(4, np.float32)), name="w")


def test_adam_adds_eps_to_uncorrected_sqrt_v():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
    g = np.array([1e-3, 1e-5, 1e-7, 1.0], np.float32)
    net = Net()
    opt = nn.Adam(net.trainable_params(), learning_rate=lr, beta1=b1, beta2=b2, eps=eps)
    opt((Tensor(g),))  # one step from w = 0
    step = -net.w.asnumpy().astype(np.float64)
    g64 = g.astype(np.float64)
    m, v = (1 - b1) * g64, (1 - b2) * g64 ** 2
    textbook = lr * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps)       # torch.optim.Adam, the reference
    eps_hat = lr * np.sqrt(1 - b2) / (1 - b1) * m / (np.sqrt(v) + eps)   # the ops.Adam formula
    print(f"gradient {g}: mindspore step {step}, eps-hat {eps_hat}, textbook {textbook}")
    assert np.allclose(step, eps_hat, rtol=1e-5)
    assert not np.allclose(step, textbook, rtol=1e-4, atol=1e-5)  # differs for the small gradients


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_adam_adds_eps_to_uncorrected_sqrt_v()
    print("confirmed: adam-epsilon-hat")
