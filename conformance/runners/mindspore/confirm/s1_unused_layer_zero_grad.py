"""A layer left out of the forward pass gets a ZERO gradient (not None) from value_and_grad, so
optimizer(grads) applies weight decay and momentum to it: it keeps moving (seed 1; mindspore#309).
Also a layer never used at all gets zeros."""
import numpy as np
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.spare, self.b = nn.Dense(4, 4), nn.Dense(4, 4), nn.Dense(4, 2)

rng = np.random.default_rng(0)
x, t = (ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))
for opt_cls, kw in ((nn.SGD, dict(weight_decay=0.01)), (nn.Momentum, dict(momentum=0.9))):
    net = Net()
    opt = opt_cls(net.trainable_params(), learning_rate=0.1, **kw)
    full = ms.value_and_grad(lambda x, t: ((net.b(net.a(x)) - t) ** 2).mean(), None, opt.parameters)
    head = ms.value_and_grad(lambda x, t: ((net.b(x) - t) ** 2).mean(), None, opt.parameters)
    _, grads = full(x, t)
    opt(grads)
    before = net.a.weight.asnumpy().copy()
    _, grads = head(x, t)  # layer a not used in this step
    g = dict(zip([p.name for p in opt.parameters], grads))
    assert not np.any(g["a.weight"].asnumpy()) and not np.any(g["spare.weight"].asnumpy()), "zeros, not None"
    opt(grads)
    moved = np.abs(net.a.weight.asnumpy() - before).max()
    print(f"{opt_cls.__name__}: unused a.weight grad is zeros; a.weight moved by {moved:.2e} in a step without it")
    assert moved > 0
print("confirmed: unused / never-used parameters get zero gradients, and decay/momentum still move them")
