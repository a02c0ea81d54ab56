"""step-skips-frozen

Paddle's Optimizer.step() and minimize() (what hapi's Model.train_batch calls) skip a parameter whose
stop_gradient is True even when it holds a gradient (one it got before being frozen, one clear_grad()
left on it, or the zeros clear_grad() filled in), so a frozen parameter gets no update, no decay and no
momentum. In the reference semantics (torch's step()) the optimizer updates every parameter it holds
that has a gradient, frozen or not.

Upstream: no upstream page states it.
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402


def update(opt, loss, how):
    if how == "step":
        opt.step()
    else:
        opt.minimize(loss)


def frozen_between_backward_and_update(how):
    """backward, then a.weight is frozen, then the update: a.weight holds a fresh gradient."""
    paddle.seed(0)
    a, b = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
    opt = paddle.optimizer.SGD(0.1, parameters=a.parameters() + b.parameters())
    loss = b(a(paddle.randn([8, 4]))).pow(2).mean()
    loss.backward()
    a.weight.stop_gradient = True
    before, bias_before = a.weight.numpy().copy(), a.bias.numpy().copy()
    grad = float(np.abs(a.weight.grad.numpy()).max())
    update(opt, loss, how)
    moved = float(np.abs(a.weight.numpy() - before).max())
    bias_moved = float(np.abs(a.bias.numpy() - bias_before).max())
    print(f"opt.{how}() right after a.weight was frozen: it holds a gradient (max |g| {grad:.3f}), the update "
          f"moved it by {moved:g} (the reference: lr * |g|, {0.1 * grad:.3g}); the trainable a.bias moved by "
          f"{bias_moved:.3g}")
    assert grad > 0 and moved == 0.0 and bias_moved > 0


def test_step_skips_frozen_with_gradient():
    frozen_between_backward_and_update("step")


def test_minimize_skips_frozen_with_gradient():
    frozen_between_backward_and_update("minimize")


def test_stale_gradient_does_not_move_it():
    """A parameter frozen after a step keeps its gradient through clear_grad() (clear-skips-frozen);
    the next update, step() or minimize(), still leaves it where it is."""
    seen = []
    for how in ("step", "minimize"):
        for set_to_zero in (True, False):
            paddle.seed(0)
            a, b = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
            opt = paddle.optimizer.SGD(0.1, parameters=a.parameters() + b.parameters())
            x = paddle.randn([8, 4])
            b(a(x)).pow(2).mean().backward()
            opt.step()
            a.weight.stop_gradient = True  # freeze a.weight once the optimizer exists
            opt.clear_grad(set_to_zero=set_to_zero)
            before = a.weight.numpy().copy()
            loss = b(a(x)).pow(2).mean()
            loss.backward()
            held = float(np.abs(a.weight.grad.numpy()).max())
            update(opt, loss, how)
            moved = float(np.abs(a.weight.numpy() - before).max())
            seen.append((f"{how}() after clear_grad(set_to_zero={set_to_zero})", held, moved))
    print("frozen a.weight holding a stale gradient, moved by: " + "; ".join(
        f"{label}: {moved:g} (max |g| {held:.3f})" for label, held, moved in seen))
    assert all(held > 0 and moved == 0.0 for _, held, moved in seen)


def test_zero_gradient_gets_no_decay_or_momentum():
    """clear_grad() zero-fills a.weight while it is trainable, then it is frozen: Momentum with
    weight_decay would decay it and move it with its velocity; Paddle's step leaves it."""
    paddle.seed(0)
    a, b = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
    opt = paddle.optimizer.Momentum(0.1, momentum=0.9, parameters=a.parameters() + b.parameters(), weight_decay=0.01)
    x = paddle.randn([8, 4])
    b(a(x)).pow(2).mean().backward()
    opt.step()
    opt.clear_grad()  # set_to_zero=True: a.weight.grad becomes zeros
    a.weight.stop_gradient = True
    before = a.weight.numpy().copy()
    b(a(x)).pow(2).mean().backward()
    zeros = a.weight.grad is not None and not np.any(a.weight.grad.numpy())
    opt.step()
    moved = float(np.abs(a.weight.numpy() - before).max())
    print(f"Momentum(0.9, weight_decay=0.01): frozen a.weight holds a zero gradient: {zeros}; with its velocity "
          f"from step 0 and the decay the reference moves it, the step moved it by {moved:g}")
    assert zeros and moved == 0.0


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_step_skips_frozen_with_gradient()
    test_minimize_skips_frozen_with_gradient()
    test_stale_gradient_does_not_move_it()
    test_zero_gradient_gets_no_decay_or_momentum()
    print("confirmed: step-skips-frozen")
