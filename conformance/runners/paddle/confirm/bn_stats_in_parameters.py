"""bn-stats-in-parameters

Paddle's BatchNorm keeps its running statistics `_mean` / `_variance` as Parameters (trainable=False,
stop_gradient=True), so layer.parameters() returns them and an optimizer built from it holds them; they
get no gradient and its step never moves them, L2 decay included. In the reference semantics the
running statistics are buffers, outside the parameter collection.

Upstream: https://github.com/PaddlePaddle/Paddle/issues/31263
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402


def test_running_stats_are_parameters():
    bn = paddle.nn.BatchNorm1D(3)
    names = [n for n, _ in bn.named_parameters()]
    trainable = [p.trainable for p in bn.parameters()]
    stop_gradient = [p.stop_gradient for p in bn.parameters()]
    print(f"BatchNorm1D(3).named_parameters(): {names}, trainable: {trainable}, stop_gradient: {stop_gradient}")
    assert names == ["weight", "bias", "_mean", "_variance"]
    assert trainable == [True, True, False, False]
    assert stop_gradient == [False, False, True, True]


def test_optimizer_holds_them_and_never_steps_them():
    paddle.seed(0)
    bn = paddle.nn.BatchNorm1D(3)
    opt = paddle.optimizer.SGD(0.1, parameters=bn.parameters(), weight_decay=paddle.regularizer.L2Decay(0.5))
    held = [p for p in opt._parameter_list if p is bn._mean or p is bn._variance]
    bn(paddle.randn([8, 3])).pow(2).mean().backward()
    mean_after_forward = bn._mean.numpy().copy()  # the forward updated it; the step should not
    opt.step()
    moved = float(np.abs(bn._mean.numpy() - mean_after_forward).max())
    print(f"SGD(L2Decay(0.5)) built from bn.parameters() holds {len(held)} running statistics "
          f"({len(opt._parameter_list)} parameters in all); _mean.grad is {bn._mean.grad}; "
          f"the step moved the running mean by {moved}")
    assert len(held) == 2 and len(opt._parameter_list) == 4
    assert bn._mean.grad is None and moved == 0.0


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_running_stats_are_parameters()
    test_optimizer_holds_them_and_never_steps_them()
    print("confirmed: bn-stats-in-parameters")
