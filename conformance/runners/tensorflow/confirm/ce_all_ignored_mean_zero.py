"""ce-all-ignored-mean-zero

Keras 3 (TF >= 2.16): SparseCategoricalCrossentropy(ignore_class=c) with its mean reduction
(sum_over_batch_size) weighs each kept sample by total / valid, computed with divide_no_nan, so a batch whose
labels are all c has loss 0 (not 0/0) and a zero gradient, in the loop and as fit's reported loss. A batch with
kept samples gives torch's mean over them. torch's CrossEntropyLoss (and Keras 2, which computes total / valid
and gives NaN) reports NaN for the all-ignored mean, with a zero gradient too.

Upstream: https://github.com/keras-team/keras/pull/21908
"""
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's C++ INFO/WARNING lines; before the import
warnings.simplefilter("ignore")
_null, _stderr = os.open(os.devnull, os.O_WRONLY), os.dup(2)
os.dup2(_null, 2)  # TF 2.21 prints its oneDNN notice through absl at import, past TF_CPP_MIN_LOG_LEVEL
try:
    import numpy as np
    import tensorflow as tf
    import keras
finally:
    os.dup2(_stderr, 2)
    os.close(_stderr)
    os.close(_null)
keras.utils.set_random_seed(0)

LOGITS = np.array([[2.0, -1.0, 0.5], [-0.3, 0.2, 1.5], [0.1, 0.4, -2.0], [1.2, 0.7, 0.3]], np.float32)


def loss_and_grad(labels):
    scores = tf.Variable(LOGITS)
    with tf.GradientTape() as tape:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)(labels, scores)
    return float(loss), tape.gradient(loss, scores).numpy()


def test_all_ignored_batch_has_mean_zero():
    loss, grad = loss_and_grad(np.zeros(4, np.int64))  # every label the ignored class
    print(f"all labels ignored: loss {loss}, max |gradient| {np.abs(grad).max()} (torch: nan, 0)")
    assert loss == 0.0 and not np.any(grad)
    labels = np.array([0, 2, 1, 1], np.int64)  # one ignored: the mean over the other three, as torch
    p = np.exp(LOGITS - LOGITS.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    partial, _ = loss_and_grad(labels)
    print(f"sample 0 ignored: loss {partial:.6f} (torch {-np.log(p[[1, 2, 3], labels[1:]]).mean():.6f})")
    assert np.isclose(partial, -np.log(p[[1, 2, 3], labels[1:]]).mean(), rtol=1e-5)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_all_ignored_batch_has_mean_zero()
    print("confirmed: ce-all-ignored-mean-zero")
