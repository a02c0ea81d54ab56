"""no-decay-for-beta-gamma

MindSpore: an optimizer built from an ungrouped parameter list applies its weight_decay only to
parameters without 'beta' or 'gamma' in their names, so BatchNorm's and LayerNorm's affine parameters
are not decayed (parameter groups decay them). The reference semantics decay every parameter the
optimizer holds.

Upstream: https://www.mindspore.cn/docs/en/stable/api_python/nn/mindspore.nn.Momentum.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn, ops  # noqa: E402


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc, self.bn, self.ln = nn.Dense(4, 4, has_bias=False), nn.BatchNorm1d(4), nn.LayerNorm((4,))


def decay_only_step(grouped):
    """One SGD step with weight_decay 0.5, lr 0.1 and zero gradients: only decay can move a weight."""
    net = Net()
    for p, value in ((net.fc.weight, 1.0), (net.bn.gamma, 2.0), (net.bn.beta, 1.0),
                     (net.ln.gamma, 2.0), (net.ln.beta, 1.0)):
        p.set_data(ms.Tensor(np.full(p.shape, value, np.float32)))
    params = net.trainable_params()
    opt = nn.SGD([{"params": params}] if grouped else params, learning_rate=0.1, weight_decay=0.5)
    opt(tuple(ops.zeros_like(p) for p in opt.parameters))
    return {p.name: float(p.asnumpy().flat[0]) for p in opt.parameters}


def test_ungrouped_weight_decay_skips_gamma_and_beta():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ungrouped, grouped = decay_only_step(False), decay_only_step(True)
    show = lambda d: ", ".join(f"{k} {v:.4g}" for k, v in d.items())  # noqa: E731
    print(f"one decay-only step (x * 0.95 when decayed): ungrouped {show(ungrouped)} | grouped {show(grouped)}")
    assert np.isclose(ungrouped["fc.weight"], 0.95)  # the decay is on...
    for name in ("bn.gamma", "ln.gamma"):
        assert ungrouped[name] == 2.0, name  # ...but gamma and beta keep their values
    for name in ("bn.beta", "ln.beta"):
        assert ungrouped[name] == 1.0, name
    # grouped, the same parameters are decayed: the exemption is the ungrouped name rule
    assert np.isclose(grouped["bn.gamma"], 1.9) and np.isclose(grouped["ln.beta"], 0.95)


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_ungrouped_weight_decay_skips_gamma_and_beta()
    print("confirmed: no-decay-for-beta-gamma")
