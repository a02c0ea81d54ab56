"""Paddle 3: BatchNorm1D's running variance is updated with the BIASED batch variance (1/m, as the
BatchNorm1D doc formula writes it), where torch/the suite's reference use the unbiased (1/(m-1)) one.
Eval-mode outputs (and their gradients) then differ from the reference too.
Confirms: bn-running-var-unbiased, bn-custom-momentum-eps, seed-4-bn-stats-not-regularized[*] (running_var
check only), bn-eval-uses-running-stats, bn-eval-passes-grad, bn-stats-fixed-in-eval-with-decay[*],
train-mode-reaches-contained[framework_list]."""
import warnings; warnings.filterwarnings("ignore")
import numpy as np, paddle

print("paddle", paddle.__version__)
bn = paddle.nn.BatchNorm1D(1, momentum=0.9)     # paddle momentum: weight of the OLD value
bn(paddle.to_tensor([[1.0], [3.0]]))
mean, var = float(bn._mean.numpy()[0]), float(bn._variance.numpy()[0])
# batch mean 2, biased var 1, unbiased var 2
print(f"running mean {mean:.6f} (expect 0.9*0 + 0.1*2 = 0.2)")
print(f"running var  {var:.6f} (biased: 0.9*1 + 0.1*1 = 1.0; unbiased as torch: 0.9*1 + 0.1*2 = 1.1)")
assert abs(mean - 0.2) < 1e-6 and abs(var - 1.0) < 1e-6

x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
bn = paddle.nn.BatchNorm1D(3, momentum=0.7)
bn(paddle.to_tensor(x))
biased, unbiased = 0.7 + 0.3 * x.var(0), 0.7 + 0.3 * x.var(0, ddof=1)
print("8x3 batch: paddle", bn._variance.numpy(), "biased", biased, "unbiased", unbiased)
assert np.allclose(bn._variance.numpy(), biased, rtol=1e-5) and not np.allclose(bn._variance.numpy(), unbiased, rtol=1e-3)
bn.eval()
y = bn(paddle.to_tensor(x)).numpy()
assert np.allclose(y, (x - bn._mean.numpy()) / np.sqrt(biased + 1e-5), atol=1e-5)  # eval uses those stats
print("CONFIRMED: running variance uses the biased batch variance; eval normalizes with it")
