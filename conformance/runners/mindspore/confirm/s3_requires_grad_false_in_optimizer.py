"""requires_grad=False only hides a Parameter from trainable_params(); handed to an optimizer
explicitly (or via get_parameters(), which includes BatchNorm moving_mean/moving_variance) it gets a
zero gradient and weight decay moves it - in eval mode too."""
import numpy as np
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.bn, self.b = nn.Dense(4, 4), nn.BatchNorm1d(4), nn.Dense(4, 2)

rng = np.random.default_rng(0)
x, t = (ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))
net = Net()
net.a.weight.requires_grad = False
net.bn.moving_mean.set_data(ms.Tensor(np.full(4, 0.5, np.float32)))
params = net.get_parameters()  # all state: includes the frozen weight and the BN moving statistics
opt = nn.SGD(params, learning_rate=0.1, weight_decay=0.1)
print("optimizer holds:", [p.name for p in opt.parameters])
grad_fn = ms.value_and_grad(lambda x, t: ((net.b(net.bn(net.a(x))) - t) ** 2).mean(), None, opt.parameters)
net.set_train(False)  # eval: BatchNorm must not touch its statistics
w0, m0 = net.a.weight.asnumpy().copy(), net.bn.moving_mean.asnumpy().copy()
_, grads = grad_fn(x, t)
g = dict(zip([p.name for p in opt.parameters], grads))
assert not np.any(g["a.weight"].asnumpy()) and not np.any(g["bn.moving_mean"].asnumpy())
opt(grads)
dw, dm = np.abs(net.a.weight.asnumpy() - w0).max(), np.abs(net.bn.moving_mean.asnumpy() - m0).max()
print(f"frozen a.weight moved {dw:.2e}; bn.moving_mean moved {dm:.2e} in an eval step (decay 0.1*0.1*0.5 = 5e-3)")
assert dw > 0 and np.isclose(dm, 5e-3, rtol=1e-4)
print("confirmed: requires_grad=False / BN statistics handed to the optimizer are decayed")
