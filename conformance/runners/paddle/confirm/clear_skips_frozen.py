"""clear-skips-frozen

Paddle's Optimizer.clear_grad() (set_to_zero True or False) clears only the parameters whose
stop_gradient is False: a parameter frozen once it holds a gradient keeps that gradient through every
later clear. In the reference semantics (torch's zero_grad()) clearing clears every parameter's
gradient, frozen or not.

Upstream: no upstream page states it (the clear_grad source filters on stop_gradient).
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402


def check(set_to_zero):
    paddle.seed(0)
    a, b = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
    opt = paddle.optimizer.SGD(0.1, parameters=a.parameters() + b.parameters())
    x = paddle.randn([8, 4])
    b(a(x)).pow(2).mean().backward()
    opt.step()
    last = a.weight.grad.numpy().copy()
    a.weight.stop_gradient = True  # freeze a.weight once the optimizer exists
    opt.clear_grad(set_to_zero=set_to_zero)
    kept_after_clear = a.weight.grad is not None and np.array_equal(a.weight.grad.numpy(), last)
    b(a(x)).pow(2).mean().backward()  # the next step: a.weight is frozen, gets nothing new
    opt.step()
    opt.clear_grad(set_to_zero=set_to_zero)
    kept = a.weight.grad is not None and np.array_equal(a.weight.grad.numpy(), last)
    other = b.weight.grad
    other = "None" if other is None else f"max |g| {float(np.abs(other.numpy()).max()):g}"
    print(f"clear_grad(set_to_zero={set_to_zero!s:5}): frozen a.weight keeps its last gradient "
          f"(max |g| {np.abs(last).max():.3f}) after the first clear: {kept_after_clear}, after a second step and "
          f"clear: {kept}; trainable b.weight after the clear: {other}")
    assert np.any(last != 0)
    assert kept_after_clear and kept
    assert other in ("None", "max |g| 0")  # the trainable parameters are cleared


def test_clear_to_zero_skips_frozen():
    check(True)


def test_clear_to_none_skips_frozen():
    check(False)


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_clear_to_zero_skips_frozen()
    test_clear_to_none_skips_frozen()
    print("confirmed: clear-skips-frozen")
