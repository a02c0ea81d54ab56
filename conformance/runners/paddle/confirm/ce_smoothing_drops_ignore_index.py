"""ce-smoothing-drops-ignore-index

paddle.nn.CrossEntropyLoss(label_smoothing=s > 0, ignore_index=k): cross_entropy turns the integer labels into
smoothed one-hot soft labels, (1 - s) * one_hot(label) + s / C, and computes a soft-label cross-entropy, to which
ignore_index does not apply: a sample labelled k (a valid class) counts as class k, with its full smoothed loss and
gradient. torch leaves it out of the loss, the gradient and the mean's count. (A negative label, such as torch's
-100, makes one_hot raise instead.) The reduction "mean" of it is ce-smoothing-mean-over-classes; "sum" sums
every sample.

Upstream: no upstream page states it (the API page says only that ignore_index is "Only valid when soft_label = False").
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

SCORES = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0], [0.0, 0.5, -0.5], [1.5, 0.2, 0.1]], np.float32)
LABELS = np.array([0, 1, 2, 0], np.int64)  # samples 0 and 3 carry the ignored label 0
S, C = 0.1, 3


def smoothed(every_sample):
    """Each sample's smoothed cross-entropy and its gradient (the ignored ones zero unless every_sample)."""
    z = SCORES.astype(np.float64)
    log_p = z - z.max(1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(1, keepdims=True))
    target = (1 - S) * np.eye(C)[LABELS] + S / C
    kept = np.ones(len(LABELS), bool) if every_sample else LABELS != 0
    return -(target * log_p).sum(1) * kept, (np.exp(log_p) - target) * kept[:, None]


def test_ignored_samples_count_under_label_smoothing():
    scores = paddle.to_tensor(SCORES, stop_gradient=False)
    loss = paddle.nn.CrossEntropyLoss(ignore_index=0, label_smoothing=S, reduction="sum")(scores, paddle.to_tensor(LABELS))
    loss.backward()
    every, grad_every = smoothed(True)
    kept, grad_kept = smoothed(False)
    print(f"summed loss {loss.item():.6f}: every sample {every.sum():.6f}, the samples not ignored (torch) {kept.sum():.6f}; "
          f"gradient of sample 0 (ignored) {scores.grad.numpy()[0]} (torch: zeros)")
    assert np.isclose(loss.item(), every.sum(), rtol=1e-5) and not np.isclose(loss.item(), kept.sum(), rtol=1e-3)
    np.testing.assert_allclose(scores.grad.numpy(), grad_every, rtol=1e-4, atol=1e-6)
    assert np.abs(scores.grad.numpy()[0]).max() > 0.01


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_ignored_samples_count_under_label_smoothing()
    print("confirmed: ce-smoothing-drops-ignore-index")
