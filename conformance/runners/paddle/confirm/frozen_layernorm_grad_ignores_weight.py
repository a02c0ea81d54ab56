"""frozen-layernorm-grad-ignores-weight

A paddle.nn.LayerNorm whose weight is frozen (stop_gradient=True on the parameter, or the layer's
requires_grad_(False)) passes its input the gradient computed as if the weight were 1; trainable, the
same layer passes the right one, and freezing the bias alone changes nothing. In the reference
semantics a LayerNorm passes its input the gradient through its weight, frozen or not.

Upstream: no upstream page states it.
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

rng = np.random.default_rng(0)
X0 = rng.standard_normal((6, 5)).astype("float32")
GAMMA = rng.uniform(0.5, 1.5, 5).astype("float32")
BETA = rng.standard_normal(5).astype("float32")


def input_grad(freeze_weight=False, freeze_bias=False, layer_switch=False):
    """x.grad of mean(LayerNorm(x) ** 2), with the weight / bias / whole layer frozen as asked."""
    ln = paddle.nn.LayerNorm(5)
    ln.weight.set_value(GAMMA)
    ln.bias.set_value(BETA)
    ln.weight.stop_gradient, ln.bias.stop_gradient = freeze_weight, freeze_bias
    if layer_switch:
        ln.requires_grad_(False)
    x = paddle.to_tensor(X0, stop_gradient=False)
    y = ln(x)
    (y ** 2).mean().backward()
    return x.grad.numpy(), y.numpy()


def numpy_input_grad(weight):
    """d loss / d x of LayerNorm over the last axis (biased variance, eps 1e-5), loss = mean(y ** 2)."""
    mean, var = X0.mean(-1, keepdims=True), X0.var(-1, keepdims=True)
    inv_std, n = 1 / np.sqrt(var + 1e-5), X0.shape[-1]
    xhat = (X0 - mean) * inv_std
    y = xhat * GAMMA + BETA  # the forward does not depend on the flags
    dxhat = 2 * y / y.size * weight
    return inv_std / n * (n * dxhat - dxhat.sum(-1, keepdims=True) - xhat * (dxhat * xhat).sum(-1, keepdims=True))


TRUE, AS_IF_ONE = numpy_input_grad(GAMMA), numpy_input_grad(1.0)


def compare(label, g):
    to_true, to_one = np.abs(g - TRUE).max(), np.abs(g - AS_IF_ONE).max()
    print(f"{label}: max |x.grad - true| = {to_true:.2e}, max |x.grad - (as if weight = 1)| = {to_one:.2e}")
    assert np.abs(TRUE - AS_IF_ONE).max() > 1e-2  # the two candidates are told apart
    return to_true, to_one


def test_frozen_weight_and_bias():
    to_true, to_one = compare("weight and bias frozen (stop_gradient)", input_grad(True, True)[0])
    assert to_one < 1e-6 and to_true > 1e-2


def test_frozen_weight_only():
    to_true, to_one = compare("weight frozen, bias trainable       ", input_grad(True, False)[0])
    assert to_one < 1e-6 and to_true > 1e-2


def test_layer_requires_grad_false():
    if not hasattr(paddle.nn.Layer, "requires_grad_"):  # Paddle 2.6 has no layer-level switch
        print(f"Layer.requires_grad_ does not exist in paddle {paddle.__version__}: nothing to check")
        return
    to_true, to_one = compare("layer.requires_grad_(False)          ", input_grad(layer_switch=True)[0])
    assert to_one < 1e-6 and to_true > 1e-2


def test_trainable_passes_true_gradient():
    """The control: trainable, the gradient goes through the weight (and NumPy's formula is Paddle's)."""
    g, y = input_grad()
    assert np.allclose(y, (X0 - X0.mean(-1, keepdims=True)) / np.sqrt(X0.var(-1, keepdims=True) + 1e-5) * GAMMA + BETA,
                       atol=1e-5)
    to_true, _ = compare("trainable                            ", g)
    assert to_true < 1e-6


def test_frozen_bias_alone_passes_true_gradient():
    """The scope: freezing the bias alone does not change the input gradient."""
    to_true, _ = compare("bias frozen, weight trainable        ", input_grad(False, True)[0])
    assert to_true < 1e-6


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_frozen_weight_and_bias()
    test_frozen_weight_only()
    test_layer_requires_grad_false()
    test_trainable_passes_true_gradient()
    test_frozen_bias_alone_passes_true_gradient()
    print("confirmed: frozen-layernorm-grad-ignores-weight")
