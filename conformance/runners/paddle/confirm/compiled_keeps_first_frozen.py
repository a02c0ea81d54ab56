"""compiled-keeps-first-frozen

paddle.jit.to_static (SOT): a converted Layer keeps the stop_gradient flags its parameters had at its
first call, when its program was built: a layer unfrozen afterwards (stop_gradient=False) still gets no
gradient from it and does not train. In the reference semantics (and in Paddle's dygraph) each step
follows the parameters' current trainable flags.

Upstream: no upstream page states it.
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle.jit.sot.utils import min_graph_size_guard, strict_mode_guard  # noqa: E402

X = np.random.default_rng(0).standard_normal((8, 4)).astype("float32")


def after_unfreeze(compiled, weight_only=False):
    """Layer a (or a.weight only, weight_only) frozen at the first call, unfrozen before the second.
    Returns a.weight's gradient after the second call (None or its max |g|) and how far an SGD step
    on every parameter then moved it."""
    paddle.seed(0)
    a, b = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
    net = paddle.nn.Sequential(a, b)
    opt = paddle.optimizer.SGD(0.1, parameters=net.parameters())
    frozen = [a.weight] if weight_only else [a.weight, a.bias]
    for p in frozen:
        p.stop_gradient = True
    run = paddle.jit.to_static(net, full_graph=False) if compiled else net
    x = paddle.to_tensor(X)
    with min_graph_size_guard(0), strict_mode_guard(True):  # compile even this small graph
        run(x).pow(2).mean().backward()  # first call: builds the program
        opt.step()
        opt.clear_grad(set_to_zero=False)
        for p in frozen:
            p.stop_gradient = False  # unfreeze
        before = a.weight.numpy().copy()
        run(x).pow(2).mean().backward()
        grad = None if a.weight.grad is None else float(np.abs(a.weight.grad.numpy()).max())
        opt.step()
    return grad, float(np.abs(a.weight.numpy() - before).max())


def check(weight_only):
    what = "a.weight (a.bias trainable throughout)" if weight_only else "layer a"
    grad, moved = after_unfreeze(True, weight_only)
    eager_grad, eager_moved = after_unfreeze(False, weight_only)
    print(f"{what} frozen at the first call, then unfrozen: to_static gives a.weight the gradient {grad} and the "
          f"step moves it by {moved:g}; dygraph (the reference): max |g| {eager_grad:.3f}, moved by {eager_moved:.3g}")
    assert eager_grad is not None and eager_grad > 0 and eager_moved > 0  # the unfrozen layer would train
    assert grad is None and moved == 0.0


def test_unfrozen_layer_gets_no_gradient():
    check(weight_only=False)


def test_unfrozen_weight_gets_no_gradient():
    check(weight_only=True)


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_unfrozen_layer_gets_no_gradient()
    test_unfrozen_weight_gets_no_gradient()
    print("confirmed: compiled-keeps-first-frozen")
