"""A LayerNorm whose weight is frozen (stop_gradient=True) passes its input a wrong gradient: the one
computed as if the weight were 1. Trainable, it passes the right one (checked against NumPy)."""
import warnings

import numpy as np

warnings.simplefilter("ignore")
import paddle  # noqa: E402

rng = np.random.default_rng(0)
x0 = rng.standard_normal((6, 5)).astype("float32")
gamma = rng.uniform(0.5, 1.5, 5).astype("float32")
beta = rng.standard_normal(5).astype("float32")


def input_grad(freeze_weight, freeze_bias):
    ln = paddle.nn.LayerNorm(5)
    ln.weight.set_value(gamma)
    ln.bias.set_value(beta)
    ln.weight.stop_gradient, ln.bias.stop_gradient = freeze_weight, freeze_bias
    x = paddle.to_tensor(x0, stop_gradient=False)
    y = ln(x)
    (y ** 2).mean().backward()
    return x.grad.numpy(), y.numpy()


def numpy_input_grad(dy, weight):
    """d loss / d x of LayerNorm over the last axis (biased variance, eps 1e-5)."""
    xhat = (x0 - x0.mean(-1, keepdims=True)) / np.sqrt(x0.var(-1, keepdims=True) + 1e-5)
    inv_std, n, dxhat = 1 / np.sqrt(x0.var(-1, keepdims=True) + 1e-5), 5, dy * weight
    return inv_std / n * (n * dxhat - dxhat.sum(-1, keepdims=True) - xhat * (dxhat * xhat).sum(-1, keepdims=True))


print("paddle", paddle.__version__)
_, y = input_grad(False, False)
dy = 2 * y / y.size
for fw, fb in ((False, False), (True, True), (True, False), (False, True)):
    g, _ = input_grad(fw, fb)
    print(f"weight frozen {fw!s:5} bias frozen {fb!s:5}: max |x.grad - true| = "
          f"{np.abs(g - numpy_input_grad(dy, gamma)).max():.2e}, max |x.grad - (as if weight = 1)| = "
          f"{np.abs(g - numpy_input_grad(dy, 1.0)).max():.2e}")
