"""Under GRAPH_MODE, requires_grad=False does not stop a Parameter's gradient: value_and_grad over the
optimizer's parameters returns the full gradient of a frozen weight handed to the optimizer (here
via get_parameters()), and optimizer(grads) trains it, whether it was frozen before the first
(compiling) call or after. PyNative returns zeros for it (s3_requires_grad_false_in_optimizer.py).
The API-mapping note says MindSpore "will still compute gradients" for such a Parameter."""
import sys
import tempfile
import os
import numpy as np
import mindspore as ms
from mindspore import nn

os.environ.setdefault("MS_OM_PATH", tempfile.mkdtemp())  # a refused compile writes its IR there
mode = sys.argv[1] if len(sys.argv) > 1 else "graph"
ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Dense(4, 4), nn.Dense(4, 2)

    def construct(self, x):
        return self.b(self.a(x))

rng = np.random.default_rng(0)
x, t = (ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))
for when in ("before the first call", "after the first call"):
    net = Net()
    opt = nn.SGD(net.get_parameters(), learning_rate=0.1)

    def forward_fn(x, t):
        return ((net(x) - t) ** 2).mean()
    grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters)
    if when.startswith("before"):
        net.a.weight.requires_grad = False
    opt(grad_fn(x, t)[1])
    net.a.weight.requires_grad = False
    w0 = net.a.weight.asnumpy().copy()
    _, grads = grad_fn(x, t)
    g = np.abs(grads[0].asnumpy()).max()  # a.weight is the first parameter
    opt(grads)
    moved = np.abs(net.a.weight.asnumpy() - w0).max()
    print(f"mindspore {ms.__version__} {mode}: frozen {when}: |grad a.weight| {g:.3g}, moved {moved:.3g}")
    if mode == "graph":
        assert g > 0 and moved > 0
# nn.TrainOneStepCell (what Model.train builds) likewise
net = Net()
net.a.weight.requires_grad = False
step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.get_parameters(), learning_rate=0.1))
w0 = net.a.weight.asnumpy().copy()
step(x, t)
moved = np.abs(net.a.weight.asnumpy() - w0).max()
print(f"mindspore {ms.__version__} {mode}: TrainOneStepCell, frozen a.weight moved {moved:.3g}")
if mode == "graph":
    assert moved > 0
print("confirmed" if mode == "graph" else "(PyNative shown for comparison)")
