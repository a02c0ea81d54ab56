"""nonscalar-backward-sums

MindSpore: value_and_grad (and ops.grad, GradOperation) of a function that returns a loss left per sample
(a vector) does not raise, as torch's backward does ("grad can be implicitly created only for scalar
outputs"): a ones_like(outputs) sensitivity is attached, so the gradient is that of the vector's sum,
batch-size times the mean loss's. PyNative and GRAPH_MODE alike.

Upstream: no upstream page states it (GradOperation's docstring: "If sens_param is False, a 'ones_like(outputs)' sensitivity will be attached automatically")
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402

ms.set_seed(0)


def test_value_and_grad_of_a_vector_sums():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    x = ms.Tensor(np.arange(16, dtype=np.float32).reshape(8, 2))
    w = ms.Parameter(ms.Tensor(np.array([[1.0], [2.0]], np.float32)), name="w")
    per_sample = ms.value_and_grad(lambda x: ((ms.ops.matmul(x, w)) ** 2).reshape(-1), None, [w])
    mean = ms.value_and_grad(lambda x: ((ms.ops.matmul(x, w)) ** 2).mean(), None, [w])
    (_, (summed,)), (_, (of_mean,)) = per_sample(x), mean(x)
    print("grad of the per-sample vector", summed.asnumpy().ravel(), "| of its mean", of_mean.asnumpy().ravel())
    assert np.allclose(summed.asnumpy(), 8 * of_mean.asnumpy())


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_value_and_grad_of_a_vector_sums()
    print("confirmed: nonscalar-backward-sums")
