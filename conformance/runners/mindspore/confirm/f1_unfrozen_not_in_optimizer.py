"""An optimizer built from net.trainable_params() while a layer is frozen (requires_grad=False) never
holds that layer: unfreezing it later (requires_grad=True) does not train it. The docs: trainable_params()
leaves out requires_grad=False Parameters."""
import numpy as np
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Dense(4, 4), nn.Dense(4, 2)

rng = np.random.default_rng(0)
x, t = (ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))
net = Net()
for p in net.a.trainable_params():
    p.requires_grad = False
opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
print("mindspore", ms.__version__, "optimizer holds:", [p.name for p in opt.parameters])
grad_fn = ms.value_and_grad(lambda x, t: ((net.b(net.a(x)) - t) ** 2).mean(), None, opt.parameters)
opt(grad_fn(x, t)[1])
for p in net.a.get_parameters():
    p.requires_grad = True  # unfrozen
print("after unfreezing, trainable_params():", [p.name for p in net.trainable_params()])
w0 = net.a.weight.asnumpy().copy()
grad_fn = ms.value_and_grad(lambda x, t: ((net.b(net.a(x)) - t) ** 2).mean(), None, opt.parameters)
for _ in range(2):
    opt(grad_fn(x, t)[1])
print("a.weight moved after unfreezing:", np.abs(net.a.weight.asnumpy() - w0).max())
assert np.array_equal(net.a.weight.asnumpy(), w0)
print("confirmed: the unfrozen layer is not trained by the optimizer built while it was frozen")
