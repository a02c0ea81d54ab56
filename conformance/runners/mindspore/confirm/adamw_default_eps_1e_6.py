"""adamw-default-eps-1e-6

MindSpore: nn.AdamWeightDecay(params, ...) built without eps adds 1e-6 (nn.Adam's default is 1e-8). The
reference semantics' AdamW default eps is 1e-8 (torch.optim.AdamW).

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


def test_adamweightdecay_without_eps_uses_1e_6():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = Net()
    w0 = net.fc.weight.asnumpy().astype(np.float64)
    opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=0.1, weight_decay=0.0)  # eps left out
    g = np.array([[1e-6, 1e-5]], np.float32)  # tiny gradient: the step shows eps
    opt((ms.Tensor(g),))
    w = net.fc.weight.asnumpy()
    g64 = g.astype(np.float64)
    m, v = 0.1 * g64, 0.001 * g64 ** 2  # no bias correction (variant adamw-no-bias-correction)
    want = {eps: w0 - 0.1 * m / (np.sqrt(v) + eps) for eps in (1e-6, 1e-8)}
    print(f"AdamWeightDecay eps {opt.eps.asnumpy()}; one step with gradient {g}: w {w}, eps 1e-6 predicts "
          f"{want[1e-6]}, eps 1e-8 (reference) {want[1e-8]}; "
          f"nn.Adam's default eps {nn.Adam(net.trainable_params()).eps}")
    assert np.allclose(w, want[1e-6], rtol=1e-6)
    assert not np.allclose(w, want[1e-8], rtol=1e-3)


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_adamweightdecay_without_eps_uses_1e_6()
    print("confirmed: adamw-default-eps-1e-6")
