"""Paddle 3: BatchNorm's running statistics `_mean` / `_variance` are Parameters (trainable=False,
stop_gradient=True) and so part of layer.parameters(): an optimizer built the idiomatic way holds them.
Its step skips them (stop_gradient), so L2 decay does not touch them (seed 4 itself holds on Paddle 3).
Confirms: bn-stats-not-trainable (in_optimizer check); shows seed-4's regularization part conforms."""
import warnings; warnings.filterwarnings("ignore")
import numpy as np, paddle

print("paddle", paddle.__version__)
bn = paddle.nn.BatchNorm1D(3)
names = [n for n, _ in bn.named_parameters()]
print("named_parameters:", names, "| trainable:", [p.trainable for p in bn.parameters()])
assert names == ["weight", "bias", "_mean", "_variance"]
assert [p.trainable for p in bn.parameters()] == [True, True, False, False]
opt = paddle.optimizer.SGD(0.1, parameters=bn.parameters(), weight_decay=paddle.regularizer.L2Decay(0.5))
assert any(p is bn._mean for p in opt._parameter_list)
x = paddle.randn([8, 3])
bn(x).pow(2).mean().backward()
mean_after_fwd = bn._mean.numpy().copy()
assert bn._mean.grad is None
opt.step()
print("running mean moved by the step:", float(np.abs(bn._mean.numpy() - mean_after_fwd).max()))
assert np.array_equal(bn._mean.numpy(), mean_after_fwd)
print("CONFIRMED: the optimizer holds _mean/_variance, but never decays them")
