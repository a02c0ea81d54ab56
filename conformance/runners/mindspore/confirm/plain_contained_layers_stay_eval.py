"""plain-contained-layers-stay-eval

MindSpore: Cell.set_train() reaches registered cells only, and a Cell starts with training=False, so a
BatchNorm kept in a plain list, dict or tuple never enters train mode: it normalizes with its moving
statistics and never updates them (nn.CellList and nn.CellDict register it). The reference semantics
switch every layer the model holds to train mode.

Upstream: https://mindspore.cn/docs/api/en/r1.3/api_python/nn/mindspore.nn.CellList.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402

CONTAINERS = {"list": list, "tuple": tuple, "dict": lambda cells: dict(zip("a", cells)), "CellList": nn.CellList,
              "CellDict": lambda cells: nn.CellDict(dict(zip("a", cells)))}


class Net(nn.Cell):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.norms = CONTAINERS[kind]([nn.BatchNorm1d(3)])

    def bn(self):
        return self.norms["a"] if self.kind in ("dict", "CellDict") else self.norms[0]

    def construct(self, x):
        return self.bn()(x)


def test_batchnorm_in_plain_container_stays_in_inference_mode():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32) + 3  # far from moving mean 0
    with_moving = x / np.sqrt(1 + 1e-5)  # moving mean 0, variance 1, gamma 1, beta 0
    with_batch = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    seen = {}
    for kind in CONTAINERS:
        net = Net(kind)
        net.set_train(True)
        bn = net.bn()
        before = bn.moving_mean.asnumpy().copy()
        y = net(ms.Tensor(x)).asnumpy()
        seen[kind] = (bn.training, not np.array_equal(before, bn.moving_mean.asnumpy()),
                      "moving" if np.allclose(y, with_moving, atol=1e-4) else
                      "batch" if np.allclose(y, with_batch, atol=1e-4) else "other")
    print("after net.set_train(True): " + "; ".join(
        f"{kind}: bn.training={training}, moving_mean updated={moved}, normalized with {stats} statistics"
        for kind, (training, moved, stats) in seen.items()))
    for kind in ("list", "tuple", "dict"):
        assert seen[kind] == (False, False, "moving"), kind
    for kind in ("CellList", "CellDict"):
        assert seen[kind] == (True, True, "batch"), kind  # registered: set_train reaches it


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_batchnorm_in_plain_container_stays_in_inference_mode()
    print("confirmed: plain-contained-layers-stay-eval")
