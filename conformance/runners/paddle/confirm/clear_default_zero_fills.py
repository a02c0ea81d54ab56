"""clear-default-zero-fills

Paddle's opt.clear_grad() defaults to set_to_zero=True: a layer left out of the next forward pass keeps
a zero gradient, not None, so the next step still applies L2 decay and momentum / Adam moments to it
(the behaviour of Paddle#18838). The reference semantics clear to None (torch's zero_grad()): a
parameter left out of a step is not updated at all, as with clear_grad(set_to_zero=False).

Upstream: https://www.paddlepaddle.org.cn/documentation/docs/en/guides/model_convert/convert_from_pytorch/api_difference/input_args_usage_diff/torch.optim.Optimizer.zero_grad.html
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402


def step_without_a(make_opt, set_to_zero):
    """Step 0 trains a -> b; then opt.clear_grad() (set_to_zero=None: the default call), and step 1
    runs b alone. Returns a.weight's gradient at step 1 (None or its max |g|) and how far step 1 moved it."""
    paddle.seed(0)
    a, b = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
    opt = make_opt(a.parameters() + b.parameters())
    x = paddle.randn([8, 4])
    b(a(x)).pow(2).mean().backward()
    opt.step()
    if set_to_zero is None:
        opt.clear_grad()
    else:
        opt.clear_grad(set_to_zero=set_to_zero)
    before = a.weight.numpy().copy()
    b(x).pow(2).mean().backward()  # a is not used in this step
    grad = None if a.weight.grad is None else float(np.abs(a.weight.grad.numpy()).max())
    opt.step()
    return grad, float(np.abs(a.weight.numpy() - before).max())


def check(name, make_opt):
    grad, moved = step_without_a(make_opt, None)
    explicit_grad, explicit_moved = step_without_a(make_opt, False)
    print(f"{name:24s} layer a left out of step 1: after clear_grad() its gradient is "
          f"{'None' if grad is None else f'zeros (max |g| {grad:g})'} and the step moves it by {moved:.3g}; "
          f"after clear_grad(set_to_zero=False): {'None' if explicit_grad is None else explicit_grad}, "
          f"moved by {explicit_moved:.3g}")
    assert grad == 0.0 and moved > 0, "the default clear_grad() zero-fills and the step moves the unused layer"
    assert explicit_grad is None and explicit_moved == 0.0  # the reference's clearing, for contrast


def test_sgd_weight_decay():
    check("SGD(weight_decay=5e-4)", lambda p: paddle.optimizer.SGD(0.1, parameters=p, weight_decay=5e-4))


def test_sgd_l2decay():
    check("SGD(L2Decay(5e-4))", lambda p: paddle.optimizer.SGD(
        0.1, parameters=p, weight_decay=paddle.regularizer.L2Decay(5e-4)))


def test_momentum():
    check("Momentum(momentum=0.9)", lambda p: paddle.optimizer.Momentum(0.1, momentum=0.9, parameters=p))


def test_adam():
    check("Adam()", lambda p: paddle.optimizer.Adam(0.1, parameters=p))


def test_adamw():
    check("AdamW(weight_decay=0.01)", lambda p: paddle.optimizer.AdamW(0.1, parameters=p, weight_decay=0.01))


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_sgd_weight_decay()
    test_sgd_l2decay()
    test_momentum()
    test_adam()
    test_adamw()
    print("confirmed: clear-default-zero-fills")
