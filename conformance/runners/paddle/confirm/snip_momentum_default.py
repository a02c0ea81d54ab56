"""paddle.optimizer.Momentum built without `momentum` uses 0.9 (torch's SGD, the reference, uses 0):
two steps equal a hand-written heavy-ball update with mu = 0.9."""
import warnings

import numpy as np

warnings.simplefilter("ignore")
import paddle  # noqa: E402

print("paddle", paddle.__version__)
w = paddle.create_parameter([3], "float32", default_initializer=paddle.nn.initializer.Constant(1.0))
opt = paddle.optimizer.Momentum(learning_rate=0.1, parameters=[w])  # momentum left out
print("opt._momentum =", opt._momentum)
g = np.array([1.0, 2.0, 3.0], "float32")
v, expected = np.zeros(3), np.ones(3)
for _ in range(2):
    (w * paddle.to_tensor(g)).sum().backward()
    opt.step()
    opt.clear_grad()
    v = 0.9 * v + g
    expected = expected - 0.1 * v
print("two steps equal velocity with mu=0.9:", np.allclose(w.numpy(), expected), w.numpy())
