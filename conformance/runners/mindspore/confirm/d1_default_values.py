"""Constructor defaults, read from the built objects and confirmed by what a step does: nn.SGD
without learning_rate steps with 0.1; nn.AdamWeightDecay without weight_decay / eps does not decay
and uses eps 1e-6; nn.LayerNorm without epsilon adds 1e-7; nn.Momentum has no default
learning_rate / momentum (required arguments); nn.BatchNorm1d: momentum 0.9 (old statistic's
weight, stored as 1 - 0.9 = the new batch's weight 0.1) and eps 1e-5; nn.Adam eps 1e-8."""
import numpy as np
import mindspore as ms
from mindspore import nn

print("mindspore", ms.__version__)
w0 = np.array([[1.0, -2.0]], np.float32)
g = ms.Tensor(np.array([[0.5, 0.25]], np.float32))

d = nn.Dense(2, 1, has_bias=False, weight_init=ms.Tensor(w0))
sgd = nn.SGD(d.trainable_params())  # learning_rate left out
sgd((g,))
print("SGD learning_rate:", sgd.learning_rate.asnumpy(), "step moved w by", w0 - d.weight.asnumpy())
assert np.allclose(w0 - d.weight.asnumpy(), 0.1 * g.asnumpy())

d = nn.Dense(2, 1, has_bias=False, weight_init=ms.Tensor(w0))
adamw = nn.AdamWeightDecay(d.trainable_params(), learning_rate=0.1)  # weight_decay, eps left out
print("AdamWeightDecay weight_decay:", adamw.weight_decay, "eps:", adamw.eps.asnumpy())
gs = np.array([[1e-6, 1e-5]], np.float32)  # tiny gradient: the step shows eps
adamw((ms.Tensor(gs),))
m, v = 0.1 * gs, 0.001 * gs * gs  # no bias correction (variant adamw-no-bias-correction)
for eps, wd in ((1e-6, 0.0), (1e-8, 0.01)):
    print(f"  eps {eps:g}, wd {wd:g} predicts", w0 * (1 - 0.1 * wd) - 0.1 * m / (np.sqrt(v) + eps))
print("  observed", d.weight.asnumpy())
assert np.allclose(d.weight.asnumpy(), w0 - 0.1 * m / (np.sqrt(v) + 1e-6), rtol=1e-6)

ln = nn.LayerNorm((3,))  # epsilon left out
x = np.array([[1.0, 1.001, 1.002]], np.float32)  # variance 6.7e-7: the epsilon shows
y, x = ln(ms.Tensor(x)).asnumpy(), x.astype(np.float64)
for eps in (1e-7, 1e-5):
    print(f"LayerNorm, eps {eps:g} predicts", (x - x.mean()) / np.sqrt(x.var() + eps))
print("  observed", y, "epsilon attribute", ln.epsilon)
assert np.allclose(y, (x - x.mean()) / np.sqrt(x.var() + 1e-7), atol=2e-3)

bn = nn.BatchNorm1d(2)
print("BatchNorm1d momentum attribute (new batch's weight):", bn.momentum, "eps:", bn.eps)
bn.set_train(True)
bn(ms.Tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)))
print("  running mean after one batch of mean [2, 3]:", bn.moving_mean.asnumpy())
assert np.allclose(bn.moving_mean.asnumpy(), [0.2, 0.3])
print("Adam eps:", nn.Adam(nn.Dense(2, 1).trainable_params()).eps)
for missing in ({"momentum": 0.9}, {"learning_rate": 0.1}):
    try:
        nn.Momentum(nn.Dense(2, 1).trainable_params(), **missing)
    except TypeError as exc:
        print("nn.Momentum without", "learning_rate" if "momentum" in missing else "momentum", "->", exc)
print("confirmed")
