"""With an ungrouped parameter list, MindSpore optimizers skip weight decay for parameters whose
names contain 'beta' or 'gamma' (BatchNorm's bias and weight); parameter groups decay them."""
import numpy as np
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

for grouped in (False, True):
    net = Net()
    net.bn.gamma.set_data(ms.Tensor(np.full(4, 2.0, np.float32)))
    params = net.trainable_params()
    opt = nn.SGD([{"params": params}] if grouped else params, learning_rate=0.1, weight_decay=0.5)
    opt(tuple(ms.ops.zeros_like(p) for p in opt.parameters))  # zero gradient: only decay can move it
    print(f"grouped={grouped}: gamma after one decay-only step = {net.bn.gamma.asnumpy()[0]:.4f}")
    assert np.isclose(net.bn.gamma.asnumpy()[0], 1.9 if grouped else 2.0)
print("confirmed: gamma/beta are exempt from weight decay unless parameters are grouped")
