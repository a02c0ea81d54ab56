"""opt.clear_grad() (set_to_zero True or False) clears only parameters with stop_gradient False: a
parameter frozen after a backward keeps its last gradient; opt.step() skips it (it does not move)."""
import warnings

import numpy as np

warnings.simplefilter("ignore")
import paddle  # noqa: E402

print("paddle", paddle.__version__)
for set_to_zero in (True, False):
    paddle.seed(0)
    a, b = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
    opt = paddle.optimizer.SGD(0.1, parameters=a.parameters() + b.parameters())
    x = paddle.randn([8, 4])
    b(a(x)).pow(2).mean().backward()
    opt.step()
    last = a.weight.grad.numpy().copy()
    a.weight.stop_gradient = True  # freeze a.weight once the optimizer exists
    opt.clear_grad(set_to_zero=set_to_zero)
    before = a.weight.numpy().copy()
    b(a(x)).pow(2).mean().backward()
    opt.step()
    print(f"set_to_zero={set_to_zero}: frozen a.weight.grad after clear_grad + backward equals its last "
          f"gradient: {np.array_equal(a.weight.grad.numpy(), last)} (max |g| {np.abs(last).max():.3f}); "
          f"a.weight moved by the step: {not np.array_equal(a.weight.numpy(), before)}")
