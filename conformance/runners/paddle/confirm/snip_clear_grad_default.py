"""Paddle 3: the default opt.clear_grad() zero-fills gradients (set_to_zero=True), so a layer left out
of the next forward pass has a zero gradient, not None, and the optimizer steps it: L2 decay (seed 1),
momentum and Adam moments keep moving it. clear_grad(set_to_zero=False) leaves None and it stays put.
Confirms: seed-1-*, unused-param-grad[default], decay-skips-unused-param[*,default],
momentum-stops-with-gradient[*,default], state-resumes-after-gap[*,default]."""
import warnings; warnings.filterwarnings("ignore")
import numpy as np, paddle

def run(make_opt, set_to_zero):
    paddle.seed(0)
    a, b = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
    opt = make_opt(a.parameters() + b.parameters())
    x = paddle.randn([8, 4])
    b(a(x)).pow(2).mean().backward(); opt.step()
    opt.clear_grad() if set_to_zero is None else opt.clear_grad(set_to_zero=set_to_zero)
    before = a.weight.numpy().copy()
    b(x).pow(2).mean().backward()          # a is not used in this step
    grad = None if a.weight.grad is None else float(np.abs(a.weight.grad.numpy()).max())
    opt.step()
    return grad, float(np.abs(a.weight.numpy() - before).max())

opts = {
    "SGD(weight_decay=5e-4)": lambda p: paddle.optimizer.SGD(0.1, parameters=p, weight_decay=5e-4),
    "SGD(L2Decay(5e-4))": lambda p: paddle.optimizer.SGD(0.1, parameters=p, weight_decay=paddle.regularizer.L2Decay(5e-4)),
    "Momentum()": lambda p: paddle.optimizer.Momentum(0.1, momentum=0.9, parameters=p),
    "Adam()": lambda p: paddle.optimizer.Adam(0.1, parameters=p),
    "AdamW(weight_decay=0.01)": lambda p: paddle.optimizer.AdamW(0.1, parameters=p, weight_decay=0.01),
}
print("paddle", paddle.__version__)
for name, make in opts.items():
    for mode in (None, False):
        grad, moved = run(make, mode)
        label = "clear_grad()" if mode is None else "clear_grad(set_to_zero=False)"
        print(f"{name:26s} {label:31s} unused a.weight grad: {'None' if grad is None else f'max|g|={grad:g}'}; moved by {moved:.3g}")
        if mode is None:
            assert grad == 0.0 and moved > 0, "default clear_grad: zero grad and the step moves the unused layer"
        else:
            assert grad is None and moved == 0.0
print("CONFIRMED: default clear_grad() zero-fills; the unused layer is decayed / moved by optimizer state")
