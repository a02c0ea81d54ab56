"""momentum-default-0.9

paddle.optimizer.Momentum built without `momentum` uses 0.9. The reference semantics' momentum optimizer
(torch's SGD) defaults to 0: plain SGD.

Upstream: https://paddlepaddle.org.cn/documentation/docs/en/api/paddle/optimizer/Momentum_en.html
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402


def heavy_ball(g, mu, lr=0.1, steps=2):
    """w -= lr * v with v = mu * v + g, from w = 1; mu = 0 is plain SGD."""
    w, v = np.ones(3), np.zeros(3)
    for _ in range(steps):
        v = mu * v + g
        w = w - lr * v
    return w


def test_momentum_left_out_is_0_9():
    w = paddle.create_parameter([3], "float32", default_initializer=paddle.nn.initializer.Constant(1.0))
    opt = paddle.optimizer.Momentum(learning_rate=0.1, parameters=[w])  # momentum left out
    g = np.array([1.0, 2.0, 3.0], "float32")
    for _ in range(2):
        (w * paddle.to_tensor(g)).sum().backward()
        opt.step()
        opt.clear_grad()
    got = w.numpy()
    print(f"Momentum(learning_rate=0.1) holds momentum {opt._momentum}; two steps give {got}: "
          f"mu=0.9 {heavy_ball(g, 0.9)}, mu=0 (plain SGD, the reference) {heavy_ball(g, 0.0)}")
    assert opt._momentum == 0.9
    assert np.allclose(got, heavy_ball(g, 0.9), atol=1e-6) and not np.allclose(got, heavy_ball(g, 0.0), atol=1e-3)


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_momentum_left_out_is_0_9()
    print("confirmed: momentum-default-0.9")
