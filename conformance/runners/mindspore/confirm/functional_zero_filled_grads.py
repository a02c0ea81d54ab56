"""functional-zero-filled-grads

MindSpore: ms.value_and_grad(fn, None, optimizer.parameters) returns one gradient per optimizer
parameter, and a tensor of zeros where no gradient flows (a layer left out of this step's forward, a
layer never used, one behind ops.stop_gradient, a requires_grad=False parameter or BatchNorm statistics
handed to the optimizer); optimizer(grads) then decays and moves every one of them. The reference
semantics give such a parameter no gradient at all, and the optimizer skips it.

Upstream: https://github.com/mindspore-ai/mindspore/issues/309
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn, ops  # noqa: E402


def data():
    rng = np.random.default_rng(0)
    return tuple(ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))


def by_name(opt, grads):
    assert len(grads) == len(opt.parameters)  # one gradient per optimizer parameter
    return dict(zip([p.name for p in opt.parameters], grads))


def all_zeros(grad):
    return isinstance(grad, ms.Tensor) and not np.any(grad.asnumpy())


class ThreeLayers(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.spare, self.b = nn.Dense(4, 4), nn.Dense(4, 4), nn.Dense(4, 2)  # spare: never used


def test_layer_left_out_and_never_used_get_zeros_and_still_move():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    x, t = data()
    seen = []
    for label, make in (("SGD(weight_decay=0.01)", lambda p: nn.SGD(p, learning_rate=0.1, weight_decay=0.01)),
                        ("Momentum(momentum=0.9)", lambda p: nn.Momentum(p, learning_rate=0.1, momentum=0.9)),
                        ("Adam", lambda p: nn.Adam(p, learning_rate=0.1))):
        net = ThreeLayers()
        opt = make(net.trainable_params())
        full = ms.value_and_grad(lambda x, t: ((net.b(net.a(x)) - t) ** 2).mean(), None, opt.parameters)
        head = ms.value_and_grad(lambda x, t: ((net.b(x) - t) ** 2).mean(), None, opt.parameters)
        opt(full(x, t)[1])  # step 1 uses a
        a0, spare0 = net.a.weight.asnumpy().copy(), net.spare.weight.asnumpy().copy()
        g = by_name(opt, head(x, t)[1])  # step 2 leaves a out
        assert all_zeros(g["a.weight"]) and all_zeros(g["spare.weight"]), "zeros, not None"
        opt(tuple(g.values()))
        moved_a = np.abs(net.a.weight.asnumpy() - a0).max()
        moved_spare = np.abs(net.spare.weight.asnumpy() - spare0).max()
        seen.append(f"{label}: a.weight moved {moved_a:.2e}, never-used spare.weight {moved_spare:.2e}")
        assert moved_a > 0  # decay (SGD) or the moments (Momentum, Adam) move the layer left out of the step
        if label.startswith("SGD"):
            assert moved_spare > 0  # decay moves the never-used layer too
    print("left out / never used, zero gradients; " + "; ".join(seen))


class StopGradientNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Dense(4, 4), nn.Dense(4, 2)

    def construct(self, x):
        return self.b(ops.stop_gradient(self.a(x)))


def test_layer_behind_stop_gradient_gets_zeros_and_is_decayed():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    x, t = data()
    net = StopGradientNet()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1, weight_decay=0.01)
    grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
    before = net.a.weight.asnumpy().copy()
    g = by_name(opt, grad_fn(x, t)[1])
    opt(tuple(g.values()))
    moved = np.abs(net.a.weight.asnumpy() - before).max()
    print(f"behind ops.stop_gradient: a.weight gradient all zeros={all_zeros(g['a.weight'])}; "
          f"moved by decay {moved:.2e}")
    assert all_zeros(g["a.weight"]) and moved > 0
    assert np.allclose(net.a.weight.asnumpy(), before * (1 - 0.1 * 0.01), rtol=1e-6)  # by decay alone


class FrozenAndStats(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.bn, self.b = nn.Dense(4, 4), nn.BatchNorm1d(4), nn.Dense(4, 2)

    def construct(self, x):
        return self.b(self.bn(self.a(x)))


def test_frozen_parameter_and_bn_statistics_in_optimizer_get_zeros_and_are_decayed():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    x, t = data()
    net = FrozenAndStats()
    net.a.weight.requires_grad = False
    assert "a.weight" not in [p.name for p in net.trainable_params()]  # requires_grad=False hides it there only
    net.bn.moving_mean.set_data(ms.Tensor(np.full(4, 0.5, np.float32)))
    # get_parameters(): all state, the frozen weight and BatchNorm's moving statistics included
    opt = nn.SGD(net.get_parameters(), learning_rate=0.1, weight_decay=0.1)
    assert {"a.weight", "bn.moving_mean", "bn.moving_variance"} <= {p.name for p in opt.parameters}
    grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
    net.set_train(False)  # eval: BatchNorm itself leaves its statistics alone
    w0, m0 = net.a.weight.asnumpy().copy(), net.bn.moving_mean.asnumpy().copy()
    g = by_name(opt, grad_fn(x, t)[1])
    assert all_zeros(g["a.weight"]) and all_zeros(g["bn.moving_mean"])
    opt(tuple(g.values()))
    dw = np.abs(net.a.weight.asnumpy() - w0).max()
    dm = np.abs(net.bn.moving_mean.asnumpy() - m0).max()
    print(f"frozen a.weight and bn.moving_mean in the optimizer: zero gradients; a.weight moved {dw:.2e}, "
          f"moving_mean moved {dm:.2e} in an eval step (decay 0.1 * 0.1 * 0.5 = 5e-3)")
    assert dw > 0 and np.isclose(dm, 5e-3, rtol=1e-4)
    assert np.allclose(net.a.weight.asnumpy(), w0 * (1 - 0.1 * 0.1), rtol=1e-6)  # by decay alone


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_layer_left_out_and_never_used_get_zeros_and_still_move()
    test_layer_behind_stop_gradient_gets_zeros_and_is_decayed()
    test_frozen_parameter_and_bn_statistics_in_optimizer_get_zeros_and_are_decayed()
    print("confirmed: functional-zero-filled-grads")
