"""bn-one-value-skipped

paddle.nn.BatchNorm1D in train mode on a batch of one vector does not raise (torch's nn.BatchNorm1d
raises "Expected more than 1 value per channel when training"): its CPU kernel skips the normalisation
("Only 1 element in normalization dimension, we skip the batch norm calculation, let y = x"), the running
statistics stay as they were and the weight and bias get no gradient, while the layers around it train.

Upstream: https://github.com/PaddlePaddle/Paddle/issues/11445
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.seed(0)


def test_batch_of_one_passes_through():
    bn = paddle.nn.BatchNorm1D(4, momentum=0.9)
    bn.train()
    x = paddle.to_tensor(np.array([[1.0, 2.0, 3.0, 4.0]], np.float32), stop_gradient=False)
    y = bn(x)
    (y * paddle.to_tensor(np.array([[1.0, 2.0, 3.0, 4.0]], np.float32))).sum().backward()
    print("output", y.numpy(), "| running mean", bn._mean.numpy(), "var", bn._variance.numpy(),
          "| x.grad", x.grad.numpy())
    assert np.allclose(y.numpy(), x.numpy()) and np.allclose(x.grad.numpy(), [[1, 2, 3, 4]])
    assert not np.any(bn._mean.numpy()) and np.allclose(bn._variance.numpy(), 1.0)


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_batch_of_one_passes_through()
    print("confirmed: bn-one-value-skipped")
