"""bn-one-value-normalised

MindSpore: nn.BatchNorm1d in train mode on a batch of one vector does not raise (torch's nn.BatchNorm1d
raises "Expected more than 1 value per channel when training"): it normalises the single value to zero,
so the output is the bias and no gradient reaches the input or gamma, and it updates the moving variance
with the unbiased variance of one sample, 0/0: moving_variance becomes NaN for good, and every later eval
output with it. PyNative and GRAPH_MODE alike.

Upstream: no upstream page states it (pytorch#1381 reports the same NaN for torch before torch raised)
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402

ms.set_seed(0)


def test_batch_of_one_poisons_the_moving_variance():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    bn = nn.BatchNorm1d(4, momentum=0.9)
    bn.set_train(True)
    bn.beta.set_data(ms.Tensor(np.array([0.1, 0.2, 0.3, 0.4], np.float32)))
    y = bn(ms.Tensor(np.array([[1.0, 2.0, 3.0, 4.0]], np.float32))).asnumpy()
    print("output", y, "| moving mean", bn.moving_mean.asnumpy(), "variance", bn.moving_variance.asnumpy())
    assert np.allclose(y, [[0.1, 0.2, 0.3, 0.4]], atol=1e-5)  # the bias
    assert np.all(np.isnan(bn.moving_variance.asnumpy()))
    bn.set_train(False)
    later = bn(ms.Tensor(np.ones((2, 4), np.float32))).asnumpy()
    print("a later eval step:", later[0])
    assert np.all(np.isnan(later))


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_batch_of_one_poisons_the_moving_variance()
    print("confirmed: bn-one-value-normalised")
