"""Parameters upstream of ops.stop_gradient get a ZERO gradient (the docs' example says so), so an
optimizer with weight decay still moves them."""
import numpy as np
import mindspore as ms
from mindspore import nn, ops

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Dense(4, 4), nn.Dense(4, 2)
    def construct(self, x):
        return self.b(ops.stop_gradient(self.a(x)))

rng = np.random.default_rng(0)
x, t = (ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))
net = Net()
opt = nn.SGD(net.trainable_params(), learning_rate=0.1, weight_decay=0.01)
grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
before = net.a.weight.asnumpy().copy()
_, grads = grad_fn(x, t)
g = dict(zip([p.name for p in opt.parameters], grads))
assert g["a.weight"] is not None and not np.any(g["a.weight"].asnumpy())
opt(grads)
moved = np.abs(net.a.weight.asnumpy() - before).max()
print(f"a.weight grad behind stop_gradient: zeros; moved by decay: {moved:.2e}")
assert moved > 0
print("confirmed: stop_gradient yields zero gradients upstream, and weight decay still moves those weights")
