"""regularizer-adds-to-decoupled-decay

With AdamW, a per-parameter L2Decay (ParamAttr / param.regularizer) does not replace the decoupled
weight_decay: AdamW keeps decaying the parameter by lr * weight_decay * w and also adds coeff * w to its
gradient (through the Adam moments), so that parameter is decayed twice. In the reference semantics a
per-parameter regularizer replaces the optimizer's decay for that parameter (as Paddle's SGD does, whose
decay is coupled).

Upstream: no upstream page states it (the Optimizer page says only that a ParamAttr regularizer makes
the optimizer's regularization ignored).
"""
import logging
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

rng = np.random.default_rng(0)
W0 = rng.normal(size=(3, 2)).astype(np.float32)
XS = [rng.normal(size=(5, 3)).astype(np.float32) for _ in range(3)]
LR, WD, B1, B2, EPS = 0.05, 0.1, 0.9, 0.999, 1e-8


class _Messages(logging.Handler):
    """Collects what Paddle logs on the root logger while an optimizer is built (its note that the
    optimizer's weight_decay "will not take effect" for a parameter with a regularizer), instead of printing it."""

    def __enter__(self):
        root = logging.getLogger()
        self.saved, self.messages = (root.level, root.handlers[:]), []
        root.handlers[:], root.level = [self], logging.INFO
        return self

    def emit(self, record):
        self.messages.append(record.getMessage())

    def __exit__(self, *exc):
        root = logging.getLogger()
        root.level, root.handlers[:] = self.saved


def linear(coeff):
    lin = paddle.nn.Linear(3, 2, weight_attr=paddle.ParamAttr(regularizer=paddle.regularizer.L2Decay(coeff)),
                           bias_attr=False)
    lin.weight.set_value(W0)
    return lin


def paddle_adamw(coeff):
    """Three AdamW(weight_decay=WD) steps on a weight carrying ParamAttr(regularizer=L2Decay(coeff))."""
    lin = linear(coeff)
    with _Messages() as log:
        opt = paddle.optimizer.AdamW(learning_rate=LR, parameters=lin.parameters(), weight_decay=WD)
    for x in XS:
        lin(paddle.to_tensor(x)).pow(2).mean().backward()
        opt.step()
        opt.clear_grad()
    return lin.weight.numpy().astype(np.float64), [m for m in log.messages if "will not take effect" in m]


def numpy_adamw(decoupled, coupled):
    """AdamW in NumPy: decoupled decay w *= 1 - lr * decoupled, and coupled * w added to the gradient."""
    w, m, v = W0.astype(np.float64), 0.0, 0.0
    for t, x in enumerate(XS, 1):
        g = 2 * x.T.astype(np.float64) @ (x @ w) / (x.shape[0] * w.shape[1]) + coupled * w
        w = w * (1 - LR * decoupled)
        m, v = B1 * m + (1 - B1) * g, B2 * v + (1 - B2) * g * g
        w = w - LR * (m / (1 - B1 ** t)) / (np.sqrt(v / (1 - B2 ** t)) + EPS)
    return w


def check_adamw(coeff):
    got, logged = paddle_adamw(coeff)
    both = np.abs(got - numpy_adamw(WD, coeff)).max()
    replaced = np.abs(got - numpy_adamw(coeff, 0.0)).max()
    print(f"AdamW(weight_decay={WD}) + ParamAttr L2Decay({coeff}): |paddle - (decoupled {WD} + coupled {coeff})| = "
          f"{both:.2e}, |paddle - (the reference: L2Decay replaces weight_decay)| = {replaced:.2e}; "
          f"Paddle logged {'that weight_decay will not take effect' if logged else 'nothing'}")
    assert np.allclose(got, numpy_adamw(WD, coeff), atol=2e-6)
    assert not np.allclose(got, numpy_adamw(coeff, 0.0), atol=1e-4)


def test_adamw_keeps_decay_and_adds_regularizer():
    assert not np.allclose(numpy_adamw(WD, 0.3), numpy_adamw(WD, 0.0), atol=1e-4)  # the coupled part shows
    check_adamw(0.3)


def test_adamw_keeps_decay_under_zero_regularizer():
    """L2Decay(0.0) on the parameter: the reference leaves it undecayed, AdamW still decays it by WD."""
    check_adamw(0.0)


def test_adamw_parameter_group_decay_replaces_weight_decay():
    """The scope: a parameter group's own weight_decay does replace AdamW's, decoupled, with no coupled
    part: the per-parameter regularizer is the way that adds up."""
    lin = paddle.nn.Linear(3, 2, bias_attr=False)
    lin.weight.set_value(W0)
    opt = paddle.optimizer.AdamW(learning_rate=LR, weight_decay=WD,
                                 parameters=[{"params": lin.parameters(), "weight_decay": 0.3}])
    for x in XS:
        lin(paddle.to_tensor(x)).pow(2).mean().backward()
        opt.step()
        opt.clear_grad()
    got = lin.weight.numpy().astype(np.float64)
    replaced = np.abs(got - numpy_adamw(0.3, 0.0)).max()
    print(f"AdamW(weight_decay={WD}) with the parameter group {{'weight_decay': 0.3}}: "
          f"|paddle - (decoupled 0.3 alone)| = {replaced:.2e}")
    assert np.allclose(got, numpy_adamw(0.3, 0.0), atol=2e-6)
    assert not np.allclose(got, numpy_adamw(WD, 0.3), atol=1e-4)


def test_sgd_regularizer_replaces_weight_decay():
    """The scope: where the optimizer's decay is coupled (SGD), the ParamAttr regularizer replaces it,
    with gradient coeff * w (L2Decay's documented 0.5 factor is on the loss)."""
    lin = linear(0.3)
    with _Messages() as log:
        opt = paddle.optimizer.SGD(learning_rate=LR, parameters=lin.parameters(), weight_decay=WD)
    lin(paddle.to_tensor(XS[0])).pow(2).mean().backward()
    g = lin.weight.grad.numpy().astype(np.float64)
    opt.step()
    w = W0.astype(np.float64)
    diff = np.abs(lin.weight.numpy() - (w - LR * (g + 0.3 * w))).max()
    logged = any("will not take effect" in m for m in log.messages)
    print(f"SGD(weight_decay={WD}) + ParamAttr L2Decay(0.3): |paddle - (w - lr * (g + 0.3 w))| = {diff:.2e}; "
          f"Paddle logged {'that weight_decay will not take effect' if logged else 'nothing'}")
    assert np.allclose(lin.weight.numpy(), w - LR * (g + 0.3 * w), atol=1e-6)


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_adamw_keeps_decay_and_adds_regularizer()
    test_adamw_keeps_decay_under_zero_regularizer()
    test_adamw_parameter_group_decay_replaces_weight_decay()
    test_sgd_regularizer_replaces_weight_decay()
    print("confirmed: regularizer-adds-to-decoupled-decay")
