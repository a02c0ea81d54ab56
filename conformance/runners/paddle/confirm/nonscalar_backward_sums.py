"""nonscalar-backward-sums

Paddle: Tensor.backward() on a loss left per sample (a vector) does not raise, as torch's "grad can be
implicitly created only for scalar outputs" does: "If grad_tensor is None, the initial gradient values of
the current Tensor would be Tensor filled with 1.0", so the gradient is that of the vector's sum, batch-
size times the mean loss's. (A static program's minimize() refuses such a loss.)

Upstream: https://paddlepaddle.org.cn/documentation/docs/en/api/paddle/Tensor/backward_en.html
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.seed(0)


def test_backward_on_a_vector_sums():
    w = paddle.to_tensor(np.array([[1.0], [2.0]], np.float32), stop_gradient=False)
    x = paddle.to_tensor(np.arange(16, dtype=np.float32).reshape(8, 2))
    per_sample = ((x @ w) ** 2).flatten()
    per_sample.backward()
    summed = w.grad.numpy().copy()
    w.clear_grad()
    ((x @ w) ** 2).mean().backward()
    print("grad of the per-sample vector", summed.ravel(), "| of its mean", w.grad.numpy().ravel())
    assert np.allclose(summed, 8 * w.grad.numpy())


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_backward_on_a_vector_sums()
    print("confirmed: nonscalar-backward-sums")
