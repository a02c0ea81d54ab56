"""nn.AdamWeightDecay (MindSpore's AdamW) has no bias correction and decays lr-scaled:
w -= lr * (m / (sqrt(v) + eps) + wd * w). Its first step is ~lr*(1-b1)/sqrt(1-b2) x the torch one."""
import numpy as np
from mindspore import nn, Parameter, Tensor

lr, b1, b2, eps, wd = 0.05, 0.9, 0.999, 1e-8, 0.1
g = np.array([0.3, -0.2, 1e-3, 2.0], np.float32)
w0 = np.ones(4)

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones(4, np.float32)), name="w")
net = Net()
opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=lr, beta1=b1, beta2=b2, eps=eps, weight_decay=wd)
opt((Tensor(g),))
got = net.w.asnumpy().astype(np.float64)
m, v = (1 - b1) * g, (1 - b2) * g.astype(np.float64) ** 2
documented = w0 - lr * (m / (np.sqrt(v) + eps) + wd * w0)
torch_adamw = w0 * (1 - lr * wd) - lr * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps)
print("mindspore  ", got)
print("documented ", documented)
print("torch AdamW", torch_adamw)
assert np.allclose(got, documented, rtol=1e-5) and not np.allclose(got, torch_adamw, rtol=1e-3)
print("confirmed: nn.AdamWeightDecay follows its documented formula (no bias correction), not AdamW as in torch")
