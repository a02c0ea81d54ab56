"""Paddle 3: a per-parameter L2Decay (ParamAttr / param.regularizer) does not replace AdamW's decoupled
weight_decay: AdamW keeps decaying the parameter by lr*weight_decay*w and ALSO adds coeff*w to its
gradient (coupled, through the Adam moments). For SGD the ParamAttr regularizer replaces the
optimizer's weight_decay, with gradient coeff*w (L2Decay's documented 0.5 factor is on the loss).
Confirms: per-param-decay-overrides[adamw] (undocumented)."""
import warnings; warnings.filterwarnings("ignore")
import numpy as np, paddle

print("paddle", paddle.__version__)
rng = np.random.default_rng(0)
w0 = rng.normal(size=(3, 2)).astype(np.float32)
xs = [rng.normal(size=(5, 3)).astype(np.float32) for _ in range(3)]
lr, wd, b1, b2, eps = 0.05, 0.1, 0.9, 0.999, 1e-8

def paddle_run(opt_cls, coeff):
    lin = paddle.nn.Linear(3, 2, weight_attr=paddle.ParamAttr(regularizer=paddle.regularizer.L2Decay(coeff)),
                           bias_attr=False)
    lin.weight.set_value(w0)
    opt = opt_cls(learning_rate=lr, parameters=lin.parameters(), weight_decay=wd)
    for x in xs:
        lin(paddle.to_tensor(x)).pow(2).mean().backward()
        opt.step(); opt.clear_grad()
    return lin.weight.numpy().astype(np.float64)

def numpy_adamw(decoupled, coupled):
    w, m, v = w0.astype(np.float64), 0.0, 0.0
    for t, x in enumerate(xs, 1):
        g = 2 * x.T.astype(np.float64) @ (x @ w) / (x.shape[0] * w.shape[1]) + coupled * w
        w = w * (1 - lr * decoupled)
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return w

for coeff in (0.0, 0.3):
    got = paddle_run(paddle.optimizer.AdamW, coeff)
    for label, exp in [("regularizer replaces weight_decay (decoupled coeff)", numpy_adamw(coeff, 0.0)),
                       ("decoupled weight_decay + coupled coeff", numpy_adamw(wd, coeff)),
                       ("decoupled weight_decay only", numpy_adamw(wd, 0.0))]:
        print(f"AdamW(weight_decay={wd}) + ParamAttr L2Decay({coeff}): |paddle - {label}| = {np.abs(got - exp).max():.2e}")
    assert np.allclose(got, numpy_adamw(wd, coeff), atol=2e-6)
    assert not np.allclose(got, numpy_adamw(coeff, 0.0), atol=1e-4)
assert not np.allclose(numpy_adamw(wd, 0.3), numpy_adamw(wd, 0.0), atol=1e-4)  # the coupled part is visible

lin = paddle.nn.Linear(3, 2, weight_attr=paddle.ParamAttr(regularizer=paddle.regularizer.L2Decay(0.3)), bias_attr=False)
lin.weight.set_value(w0)
opt = paddle.optimizer.SGD(learning_rate=lr, parameters=lin.parameters(), weight_decay=wd)
lin(paddle.to_tensor(xs[0])).pow(2).mean().backward()
g = lin.weight.grad.numpy().astype(np.float64); opt.step()
w = w0.astype(np.float64)
print(f"SGD(weight_decay={wd}) + ParamAttr L2Decay(0.3): |paddle - (w - lr*(g + 0.3 w))| = "
      f"{np.abs(lin.weight.numpy() - (w - lr * (g + 0.3 * w))).max():.2e}")
assert np.allclose(lin.weight.numpy(), w - lr * (g + 0.3 * w), atol=1e-6)
print("CONFIRMED: with AdamW the ParamAttr regularizer is added (coupled) on top of the decoupled weight_decay")
