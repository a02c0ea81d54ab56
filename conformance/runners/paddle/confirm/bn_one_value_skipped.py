"""bn-one-value-skipped

paddle.nn.BatchNorm1D in train mode on a batch of one vector does not raise (torch's nn.BatchNorm1d
raises "Expected more than 1 value per channel when training"): its CPU kernel skips the normalisation
("Only 1 element in normalization dimension, we skip the batch norm calculation, let y = x"), the running
statistics stay as they were, while the layers around it train. The weight and bias get a zero gradient,
not none, so an optimizer's weight decay (and momentum) still moves them.

Upstream: https://github.com/PaddlePaddle/Paddle/issues/11445 (the skip), and the CPU grad kernel, which zeroes
d_scale and d_bias before it returns dx = dy:
https://github.com/PaddlePaddle/Paddle/blob/029030be3c0b1a4c14d82d59dd087442d17e2382/paddle/phi/kernels/cpu/batch_norm_grad_kernel.cc
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
    print("weight.grad", bn.weight.grad.numpy(), "bias.grad", bn.bias.grad.numpy())
    assert not np.any(bn.weight.grad.numpy()) and not np.any(bn.bias.grad.numpy())  # zeros, not None
    paddle.optimizer.SGD(0.1, parameters=bn.parameters(), weight_decay=0.5).step()
    print("weight after SGD with weight_decay=0.5", bn.weight.numpy())
    assert np.allclose(bn.weight.numpy(), 0.95)  # 1 - 0.1 * 0.5 * 1: the decay moved it


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_batch_of_one_passes_through()
    print("confirmed: bn-one-value-skipped")
