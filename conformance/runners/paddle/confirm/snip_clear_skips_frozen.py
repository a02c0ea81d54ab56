"""opt.clear_grad() (set_to_zero True or False) clears only parameters with stop_gradient False: a
parameter frozen after a backward keeps its last gradient. opt.step() and opt.minimize(loss) (what hapi's
Model.train_batch calls) skip the frozen parameter: its stale gradient does not move it."""
import warnings

import numpy as np

warnings.simplefilter("ignore")
import paddle  # noqa: E402

print("paddle", paddle.__version__)
for update in ("step", "minimize"):
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
        loss = b(a(x)).pow(2).mean()
        loss.backward()
        opt.step() if update == "step" else opt.minimize(loss)
        moved = a.weight.numpy() - before
        print(f"{update:8} set_to_zero={set_to_zero!s:5}: frozen a.weight keeps its last gradient: "
              f"{np.array_equal(a.weight.grad.numpy(), last)} (max |g| {np.abs(last).max():.3f}); "
              f"the update moved it: {bool(np.any(moved))}")
