"""frozen-still-trained

MindSpore GRAPH_MODE: requires_grad=False only takes a Parameter out of trainable_params(); handed to
the optimizer (explicitly, or held since before it was frozen) it gets its full gradient from
value_and_grad and is trained, frozen before the compiling call or after, and nn.TrainOneStepCell trains
it too (PyNative returns zeros for it instead: functional-zero-filled-grads). The reference semantics give
a frozen parameter no gradient, so no optimizer moves it.

Upstream: https://mindspore.cn/docs/en/r2.4.1/note/api_mapping/pytorch_diff/Parameter.html
"""
import os
import tempfile

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
os.environ.setdefault("MS_OM_PATH", tempfile.mkdtemp())  # where a refused compile writes analyze_fail.ir
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Dense(4, 4), nn.Dense(4, 2)

    def construct(self, x):
        return self.b(self.a(x))


def data():
    rng = np.random.default_rng(0)
    return tuple(ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))


def frozen_weight_step(freeze_before_first_call):
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    x, t = data()
    net = Net()
    opt = nn.SGD(net.get_parameters(), learning_rate=0.1)  # every parameter handed over

    def forward_fn(x, t):
        return ((net(x) - t) ** 2).mean()
    grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters)
    if freeze_before_first_call:
        net.a.weight.requires_grad = False
    opt(grad_fn(x, t)[1])  # compiled here
    net.a.weight.requires_grad = False
    w0 = net.a.weight.asnumpy().copy()
    _, grads = grad_fn(x, t)
    g = dict(zip([p.name for p in opt.parameters], grads))["a.weight"].asnumpy()
    opt(grads)
    moved = np.abs(net.a.weight.asnumpy() - w0).max()
    in_trainable = "a.weight" in [p.name for p in net.trainable_params()]
    print(f"GRAPH_MODE, a.weight frozen {'before' if freeze_before_first_call else 'after'} the first call: "
          f"in trainable_params() {in_trainable}, |gradient| {np.abs(g).max():.3g}, moved {moved:.3g}")
    assert not in_trainable and np.abs(g).max() > 0 and moved > 0


def test_frozen_before_the_compiling_call_is_trained():
    frozen_weight_step(freeze_before_first_call=True)


def test_frozen_after_the_compiling_call_is_trained():
    frozen_weight_step(freeze_before_first_call=False)


def test_trainonestepcell_trains_a_frozen_parameter():
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    x, t = data()
    net = Net()
    net.a.weight.requires_grad = False
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.get_parameters(), learning_rate=0.1))
    w0 = net.a.weight.asnumpy().copy()
    step(x, t)
    moved = np.abs(net.a.weight.asnumpy() - w0).max()
    print(f"GRAPH_MODE, nn.TrainOneStepCell: frozen a.weight moved {moved:.3g}")
    assert moved > 0


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_frozen_before_the_compiling_call_is_trained()
    test_frozen_after_the_compiling_call_is_trained()
    test_trainonestepcell_trains_a_frozen_parameter()
    print("confirmed: frozen-still-trained")
