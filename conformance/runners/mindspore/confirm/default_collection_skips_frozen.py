"""default-collection-skips-frozen

MindSpore (PyNative): net.trainable_params() leaves out requires_grad=False Parameters, so an optimizer
built from it while a layer is frozen never holds that layer: setting requires_grad=True later does not
train it. The reference semantics' optimizer, built from the model's default collection, holds the frozen
parameters too, so unfreezing one trains it.

Upstream: https://mindspore.cn/docs/zh-CN/r2.2/note/api_mapping/pytorch_diff/Parameter.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Dense(4, 4), nn.Dense(4, 2)

    def construct(self, x):
        return self.b(self.a(x))


def test_layer_unfrozen_later_is_not_trained():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    rng = np.random.default_rng(0)
    x, t = (ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))
    net = Net()
    for p in net.a.trainable_params():
        p.requires_grad = False  # a frozen while the optimizer is built
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    held = [p.name for p in opt.parameters]
    grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
    opt(grad_fn(x, t)[1])
    for p in net.a.get_parameters():
        p.requires_grad = True  # unfrozen
    w0 = net.a.weight.asnumpy().copy()
    grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
    for _ in range(2):
        opt(grad_fn(x, t)[1])
    moved = np.abs(net.a.weight.asnumpy() - w0).max()
    print(f"optimizer built while a was frozen holds {held}; after unfreezing, trainable_params() "
          f"{[p.name for p in net.trainable_params()]}, and 2 steps moved a.weight by {moved:.2e}")
    assert "a.weight" not in held and moved == 0


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_layer_unfrozen_later_is_not_trained()
    print("confirmed: default-collection-skips-frozen")
