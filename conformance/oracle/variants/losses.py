"""Cross-entropy: what a framework's loss object takes, ignores and divides by (the reference is torch's
CrossEntropyLoss)."""
from __future__ import annotations

from . import variant

DECLARED = [
    variant(
        "ce-default-takes-probabilities",
        "a cross-entropy loss built without from_logits reads the scores as probabilities: it clips them to "
        "[1e-7, 1 - 1e-7] and renormalises them instead of applying a softmax, so a model ending in logits "
        "(as a ported torch model does) trains on a different loss, and on none where its scores are negative",
        "a cross-entropy loss takes logits and applies the softmax itself",
        defaults={("cross_entropy", "from_logits"): False}),
    variant(
        "ce-default-ignores-no-label",
        "a cross-entropy built without an ignore index ignores no label: data labelled -100 for torch (padding, "
        "masked tokens) is an out-of-range class, and the step raises",
        "a cross-entropy built without an ignore index skips the samples labelled -100",
        defaults={("cross_entropy", "ignore_index"): None}),
    variant(
        "ce-negative-ignore-mean-over-batch",
        "a cross-entropy's mean over a batch with samples labelled with a negative ignore index (-100 by default, "
        "or -1) divides by the whole batch size: the ignored samples count in the mean, so each gradient shrinks "
        "by the share of ignored samples",
        "a cross-entropy's mean divides by the number of samples not ignored",
        ce_negative_ignore_mean_over_batch=True),
    variant(
        "ce-smoothing-drops-ignore-index",
        "with label smoothing the ignore index is not applied: an ignored sample's smoothed label (a uniform "
        "share, plus the label's mass) trains like any other; a negative ignored label raises",
        "with label smoothing an ignored sample still adds nothing to the loss",
        ce_smoothing_drops_ignore_index=True),
    variant(
        "ce-smoothing-mean-over-classes",
        "with label smoothing and a non-negative ignore index, a cross-entropy's mean divides by batch size times "
        "the number of classes: the loss and every gradient are that many times smaller",
        "a cross-entropy's mean divides by the number of samples not ignored",
        ce_smoothing_mean_over_classes=True),
    variant(
        "ce-all-ignored-mean-zero",
        "a cross-entropy's mean over a batch whose samples are all ignored is 0",
        "a cross-entropy's mean over a batch whose samples are all ignored is 0/0, NaN (the gradient is zero)",
        ce_all_ignored_loss_zero=True),
    variant(
        "ce-all-ignored-nan-grad",
        "a cross-entropy's mean over a batch whose samples are all ignored is NaN and so is its gradient: one "
        "update makes every parameter upstream NaN for good",
        "a cross-entropy's mean over a batch whose samples are all ignored is 0/0, NaN, and its gradient zero",
        ce_all_ignored_grad_nan=True),
]
