"""ce-smoothing-mean-over-classes

paddle.nn.CrossEntropyLoss(label_smoothing=s > 0, ignore_index=k >= 0), reduction "mean": the labels are smoothed
one-hot soft labels of shape (N, C) (ce-smoothing-drops-ignore-index), and the mean's count is taken over that
matrix, sum(label != k), which is N * C (no smoothed entry equals k), so the loss and every gradient are the soft-
label sum over all N samples divided by N * C: 1 / C times the mean over the batch, and torch divides by the
samples not ignored. cross_entropy takes that branch `if ignore_index >= 0`: Paddle 3.x in dygraph and in a static
Program; Paddle 2.6 in a static Program (its dygraph counts the soft-label entries equal to k, finds none and
divides by N). Without ignore_index (the default -100) the mean divides by N, as torch's.

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


def smoothed_sum():
    """The sum over every sample of its smoothed cross-entropy (the ignored ones too)."""
    z = SCORES.astype(np.float64)
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


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_dygraph_mean()
    test_static_program_mean()
    print("confirmed: ce-smoothing-mean-over-classes")
