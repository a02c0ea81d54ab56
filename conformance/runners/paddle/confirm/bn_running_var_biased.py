"""bn-running-var-biased

Paddle's BatchNorm updates its running variance with the biased (1/m) batch variance, as the
BatchNorm1D formula writes it, and normalises with it in eval. The reference semantics (and torch) use
the unbiased (1/(m-1)) batch variance.

Upstream: https://github.com/PaddlePaddle/Paddle/pull/68159
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402


def test_two_values():
    bn = paddle.nn.BatchNorm1D(1, momentum=0.9)  # paddle's momentum: the weight of the OLD value
    bn(paddle.to_tensor([[1.0], [3.0]]))  # batch mean 2, biased variance 1, unbiased 2
    mean, var = float(bn._mean.numpy()[0]), float(bn._variance.numpy()[0])
    print(f"batch [1, 3], momentum 0.9: running mean {mean:.6f} (0.9*0 + 0.1*2 = 0.2), running var {var:.6f} "
          f"(biased: 0.9*1 + 0.1*1 = 1.0; unbiased, the reference: 0.9*1 + 0.1*2 = 1.1)")
    assert abs(mean - 0.2) < 1e-6
    assert abs(var - 1.0) < 1e-6


def test_batch_of_eight_and_eval():
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    bn = paddle.nn.BatchNorm1D(3, momentum=0.7)
    bn(paddle.to_tensor(x))
    got = bn._variance.numpy()
    biased, unbiased = 0.7 + 0.3 * x.var(0), 0.7 + 0.3 * x.var(0, ddof=1)
    bn.eval()
    y = bn(paddle.to_tensor(x)).numpy()
    eval_with_it = np.allclose(y, (x - bn._mean.numpy()) / np.sqrt(biased + 1e-5), atol=1e-5)
    print(f"8x3 batch, momentum 0.7: running var {got}, biased {biased}, unbiased {unbiased}; "
          f"eval normalises with the biased one: {eval_with_it}")
    assert np.allclose(got, biased, rtol=1e-5) and not np.allclose(got, unbiased, rtol=1e-3)
    assert eval_with_it


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_two_values()
    test_batch_of_eight_and_eval()
    print("confirmed: bn-running-var-biased")
