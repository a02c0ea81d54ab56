"""ce-negative-ignore-mean-over-batch

paddle.nn.CrossEntropyLoss with reduction "mean" (the default) and a negative ignore_index (the default -100,
or -1): the samples labelled ignore_index add nothing to the sum, as in torch, but the sum is divided by the
batch size N instead of the number of samples not ignored, so the loss and every gradient are (kept / N) times
torch's. A non-negative ignore_index divides by the count, as torch does. cross_entropy takes the count branch
only `if ignore_index >= 0`: Paddle 3.x in dygraph and in a static Program; Paddle 2.6 in a static Program, and
under paddle.jit.to_static with the loss inside the converted train step (full_graph=True, and the default
translator, SOT, where it compiles the step: a step of a few ops it runs as dygraph). Paddle 2.6's dygraph branch
counts the ignored labels and divides by the rest.

Upstream: https://github.com/PaddlePaddle/Paddle/pull/76033
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

SCORES = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0], [0.0, 0.5, -0.5], [1.5, 0.2, 0.1]], np.float32)
LABELS = np.array([-100, 1, 2, 0], np.int64)  # sample 0 carries torch's ignore label
PADDLE_3 = int(paddle.__version__.split(".")[0]) >= 3


def nll(labels, scores=SCORES):
    """Each sample's cross-entropy against its label (0 where the label is negative)."""
    z = scores.astype(np.float64)
    log_p = z - z.max(1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(1, keepdims=True))
    return np.array([-log_p[i, c] if c >= 0 else 0.0 for i, c in enumerate(labels)])


def reference_sum():
    """The sum of the three kept samples' cross-entropies (torch's mean divides it by 3)."""
    return nll(LABELS).sum()


def test_dygraph_mean_divides_by_the_batch():
    scores = paddle.to_tensor(SCORES, stop_gradient=False)
    loss = paddle.nn.CrossEntropyLoss()(scores, paddle.to_tensor(LABELS))  # ignore_index -100, reduction mean
    loss.backward()
    grad = scores.grad.numpy()
    divisor = 4 if PADDLE_3 else 3  # Paddle 2.6's dygraph divides by the samples kept
    print(f"dygraph mean: {loss.item():.6f}; sum of the kept samples / 4: {reference_sum() / 4:.6f}, / 3 (torch): "
          f"{reference_sum() / 3:.6f}; gradient of sample 0 (ignored): {grad[0]}")
    assert np.isclose(loss.item(), reference_sum() / divisor, rtol=1e-5)
    assert np.all(grad[0] == 0)
    # a non-negative ignore_index divides by the samples kept, in every version
    labels = np.array([0, 1, 2, 1], np.int64)
    kept = paddle.nn.CrossEntropyLoss(ignore_index=0)(paddle.to_tensor(SCORES), paddle.to_tensor(labels))
    assert np.isclose(kept.item(), nll(labels)[1:].sum() / 3, rtol=1e-5)


def test_static_program_mean_divides_by_the_batch():
    paddle.enable_static()
    try:
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            x = paddle.static.data("x", [None, 3], "float32")
            t = paddle.static.data("t", [None], "int64")
            loss = paddle.nn.CrossEntropyLoss()(x, t)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        value = float(np.asarray(exe.run(main, feed={"x": SCORES, "t": LABELS}, fetch_list=[loss])[0]))
    finally:
        paddle.disable_static()
    print(f"static program mean: {value:.6f} (sum of the kept samples / 4: {reference_sum() / 4:.6f})")
    assert np.isclose(value, reference_sum() / 4, rtol=1e-5)


paddle.seed(0)
MODEL = paddle.nn.Sequential(*[paddle.nn.Linear(3, 3) for _ in range(4)])  # past SOT's MIN_GRAPH_SIZE (10 ops)
LOSS_FN = paddle.nn.CrossEntropyLoss()


def train_step(x, labels):  # a converted train step as users write it: the loss inside
    return LOSS_FN(MODEL(x), labels)


def tiny_step(x, labels):  # the loss alone: a few ops, which SOT runs as dygraph
    return LOSS_FN(x, labels)


def step_mean(step, model):
    """The step's loss, the first weight's gradient, the sum of the kept samples' cross-entropies, and the
    loss's grad node (the compiled program's: Dy2StGradNode in Paddle 3, GradNodeBase in 2.6)."""
    x = paddle.to_tensor(SCORES, stop_gradient=model is not None)
    loss = step(x, paddle.to_tensor(LABELS))
    node = loss.grad_fn.name()
    loss.backward()
    weight = model[0].weight if model is not None else x
    grad = weight.grad.numpy().copy()
    weight.clear_gradient()
    with paddle.no_grad():
        scores = SCORES if model is None else model(paddle.to_tensor(SCORES)).numpy()
    return loss.item(), grad, nll(LABELS, scores).sum(), node


def test_to_static_step_with_the_loss_inside_divides_by_the_batch():
    value, eager_grad, kept, _ = step_mean(train_step, MODEL)  # dygraph
    # SOT first: Paddle 2.6.2's SOT runs a function converted with full_graph=True before as dygraph
    for name, step in (("default (SOT)", paddle.jit.to_static(train_step)),
                       ("full_graph=True", paddle.jit.to_static(train_step, full_graph=True))):
        value, grad, kept, node = step_mean(step, MODEL)
        ratio = np.unique(np.round(grad / eager_grad, 4))
        print(f"to_static {name}, loss inside: {value:.6f}; sum of the kept / 4: {kept / 4:.6f}, / 3: {kept / 3:.6f}; "
              f"grad node {node}; gradient / dygraph's {ratio}")
        assert node in ("Dy2StGradNode", "GradNodeBase")  # the compiled program's
        assert np.isclose(value, kept / 4, rtol=1e-5)
        assert np.allclose(grad, eager_grad * (1 if PADDLE_3 else 3 / 4), rtol=1e-4, atol=1e-7)
    value, _, kept, node = step_mean(paddle.jit.to_static(tiny_step), None)
    print(f"to_static default (SOT), the loss alone: {value:.6f}; grad node {node}")
    assert np.isclose(value, kept / (4 if PADDLE_3 else 3), rtol=1e-5)


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_dygraph_mean_divides_by_the_batch()
    test_static_program_mean_divides_by_the_batch()
    test_to_static_step_with_the_loss_inside_divides_by_the_batch()
    print("confirmed: ce-negative-ignore-mean-over-batch")
