"""Standalone: nn.Adam adds eps to sqrt(v_t) (uncorrected) and folds the bias correction into the
learning rate, so its step differs from torch/textbook Adam (eps added to sqrt(v_hat)) when a
gradient element is small. One step, one parameter, float32."""
import numpy as np
from mindspore import nn, Parameter, Tensor

lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
g = np.array([1e-3, 1e-5, 1e-7, 1.0], np.float32)

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.zeros(4, np.float32)), name="w")
net = Net()
opt = nn.Adam(net.trainable_params(), learning_rate=lr, beta1=b1, beta2=b2, eps=eps)
opt((Tensor(g),))
ms_step = -net.w.asnumpy().astype(np.float64)

g64 = g.astype(np.float64)
m, v = (1 - b1) * g64, (1 - b2) * g64 ** 2
textbook = lr * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps)                    # torch.optim.Adam
folded = lr * np.sqrt(1 - b2) / (1 - b1) * m / (np.sqrt(v) + eps)                  # nn.Adam doc formula
print("gradient         ", g)
print("mindspore step   ", ms_step)
print("textbook step    ", textbook)
print("nn.Adam formula  ", folded)
assert np.allclose(ms_step, folded, rtol=1e-5), "MindSpore follows its documented formula"
assert not np.allclose(ms_step, textbook, rtol=1e-4, atol=1e-5), "and differs from the textbook for small g"
print("confirmed: nn.Adam applies eps to sqrt(v_t) before the bias-corrected lr (differs for small g)")
