"""ce-smoothing-mean-over-classes

paddle.nn.CrossEntropyLoss(label_smoothing=s > 0, ignore_index=k >= 0), reduction "mean": the labels are smoothed
one-hot soft labels of shape (N, C) (ce-smoothing-drops-ignore-index), and the mean's count is taken over that
matrix, sum(label != k), which is N * C (no smoothed entry equals k), so the loss and every gradient are the soft-
label sum over all N samples divided by N * C: 1 / C times the mean over the batch, and torch divides by the
samples not ignored. cross_entropy takes that branch `if ignore_index >= 0`: Paddle 3.x in dygraph and in a static
Program; Paddle 2.6 in a static Program, and under paddle.jit.to_static with the loss inside the converted train
step (full_graph=True, and the default translator, SOT, where it compiles the step: a step of a few ops it runs as
dygraph). Paddle 2.6's dygraph counts the soft-label entries equal to k, finds none and divides by N. Without
ignore_index (the default -100) the mean divides by N, as torch's.

Upstream: no upstream page states it.
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

SCORES = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0], [0.0, 0.5, -0.5], [1.5, 0.2, 0.1]], np.float32)
LABELS = np.array([0, 1, 2, 0], np.int64)  # samples 0 and 3 carry the ignored label 0
S, N, C = 0.1, 4, 3
PADDLE_3 = int(paddle.__version__.split(".")[0]) >= 3


def smoothed_sum(scores=SCORES):
    """The sum over every sample of its smoothed cross-entropy (the ignored ones too)."""
    z = scores.astype(np.float64)
    log_p = z - z.max(1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(1, keepdims=True))
    target = (1 - S) * np.eye(C)[LABELS] + S / C
    return -(target * log_p).sum()


def test_dygraph_mean():
    loss = paddle.nn.CrossEntropyLoss(ignore_index=0, label_smoothing=S)(paddle.to_tensor(SCORES), paddle.to_tensor(LABELS))
    divisor = N * C if PADDLE_3 else N
    print(f"dygraph mean {loss.item():.6f}: smoothed sum / (N * C) {smoothed_sum() / (N * C):.6f}, / N {smoothed_sum() / N:.6f}")
    assert np.isclose(loss.item(), smoothed_sum() / divisor, rtol=1e-5)
    plain = paddle.nn.CrossEntropyLoss(label_smoothing=S)(paddle.to_tensor(SCORES), paddle.to_tensor(LABELS))
    assert np.isclose(plain.item(), smoothed_sum() / N, rtol=1e-5)  # without ignore_index: the batch mean


def test_static_program_mean():
    paddle.enable_static()
    try:
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            x = paddle.static.data("x", [None, C], "float32")
            t = paddle.static.data("t", [None], "int64")
            loss = paddle.nn.CrossEntropyLoss(ignore_index=0, label_smoothing=S)(x, t)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        value = float(np.asarray(exe.run(main, feed={"x": SCORES, "t": LABELS}, fetch_list=[loss])[0]))
    finally:
        paddle.disable_static()
    print(f"static program mean {value:.6f}: smoothed sum / (N * C) {smoothed_sum() / (N * C):.6f}")
    assert np.isclose(value, smoothed_sum() / (N * C), rtol=1e-5)


paddle.seed(0)
MODEL = paddle.nn.Sequential(*[paddle.nn.Linear(C, C) for _ in range(4)])  # past SOT's MIN_GRAPH_SIZE (10 ops)
LOSS_FN = paddle.nn.CrossEntropyLoss(ignore_index=0, label_smoothing=S)


def train_step(x, labels):  # a converted train step as users write it: the loss inside
    return LOSS_FN(MODEL(x), labels)


def tiny_step(x, labels):  # the loss alone: a few ops, which Paddle 2.6's SOT runs as dygraph
    return LOSS_FN(x, labels)


def step_mean(step, model):
    """The step's loss, the first weight's gradient, the smoothed sum, and the loss's grad node (the compiled
    program's: Dy2StGradNode in Paddle 3, GradNodeBase in 2.6)."""
    x = paddle.to_tensor(SCORES, stop_gradient=model is not None)
    loss = step(x, paddle.to_tensor(LABELS))
    node = loss.grad_fn.name()
    loss.backward()
    weight = model[0].weight if model is not None else x
    grad = weight.grad.numpy().copy()
    weight.clear_gradient()
    with paddle.no_grad():
        scores = SCORES if model is None else model(paddle.to_tensor(SCORES)).numpy()
    return loss.item(), grad, smoothed_sum(scores), node


def test_to_static_step_with_the_loss_inside():
    value, eager_grad, total, _ = step_mean(train_step, MODEL)  # dygraph
    # SOT first: Paddle 2.6.2's SOT runs a function converted with full_graph=True before as dygraph
    for name, step in (("default (SOT)", paddle.jit.to_static(train_step)),
                       ("full_graph=True", paddle.jit.to_static(train_step, full_graph=True))):
        value, grad, total, node = step_mean(step, MODEL)
        ratio = np.unique(np.round(grad / eager_grad, 4))
        print(f"to_static {name}, loss inside: {value:.6f}; smoothed sum / (N * C) {total / (N * C):.6f}, / N "
              f"{total / N:.6f}; grad node {node}; gradient / dygraph's {ratio}")
        assert node in ("Dy2StGradNode", "GradNodeBase")  # the compiled program's
        assert np.isclose(value, total / (N * C), rtol=1e-5)
        assert np.allclose(grad, eager_grad * (1 if PADDLE_3 else 1 / C), rtol=1e-4, atol=1e-7)
    value, _, total, node = step_mean(paddle.jit.to_static(tiny_step), None)
    print(f"to_static default (SOT), the loss alone: {value:.6f}; grad node {node}")
    assert np.isclose(value, total / (N * C if PADDLE_3 else N), rtol=1e-5)


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_dygraph_mean()
    test_static_program_mean()
    test_to_static_step_with_the_loss_inside()
    print("confirmed: ce-smoothing-mean-over-classes")
