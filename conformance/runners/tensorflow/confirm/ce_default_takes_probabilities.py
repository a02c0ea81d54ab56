"""ce-default-takes-probabilities

Keras: SparseCategoricalCrossentropy() built without from_logits reads the scores as probabilities
(from_logits=False): it clips them to [1e-7, 1 - 1e-7] (backend.epsilon()), takes their log and hands that
to the softmax cross-entropy, so the loss is -log(clip(s)[label] / sum(clip(s))): the clipped scores
renormalised, no softmax. The gradient is (1 / sum(clip(s)) - onehot / clip(s)) / batch where the score lies
inside the clip range, and zero where it is clipped (a negative logit gets none). torch's CrossEntropyLoss
always takes logits.

Upstream: https://www.tensorflow.org/versions/r2.14/api_docs/python/tf/keras/losses/SparseCategoricalCrossentropy
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

EPS = 1e-7
LOGITS = np.array([[2.0, -1.0, 0.5], [-0.3, 0.2, 1.5], [0.1, 0.4, -2.0], [1.2, 0.7, 0.3]], np.float32)
LABELS = np.array([0, 2, 1, 1], np.int64)


def model(scores, labels, from_logits):
    """(mean loss, its gradient) as a softmax cross-entropy of logits, or of clipped, renormalised probabilities."""
    n = len(labels)
    onehot = np.eye(scores.shape[1])[labels]
    if from_logits:
        p = np.exp(scores - scores.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        return -np.log(p[range(n), labels]).mean(), (p - onehot) / n
    clipped = np.clip(scores, EPS, 1 - EPS)
    total = clipped.sum(1, keepdims=True)
    inside = (scores >= EPS) & (scores <= 1 - EPS)
    return -np.log(clipped[range(n), labels] / total[:, 0]).mean(), (1 / total - onehot / clipped) * inside / n


def test_default_reads_scores_as_probabilities():
    scores = tf.Variable(LOGITS)
    with tf.GradientTape() as tape:
        loss = keras.losses.SparseCategoricalCrossentropy()(LABELS, scores)  # from_logits left out
    grad = tape.gradient(loss, scores).numpy()
    probs, probs_grad = model(LOGITS.astype(np.float64), LABELS, from_logits=False)
    logits, _ = model(LOGITS.astype(np.float64), LABELS, from_logits=True)
    print(f"default loss {float(loss):.6f} | clipped, renormalised probabilities {probs:.6f} | softmax of logits "
          f"{logits:.6f}; gradient at the negative scores {grad[LOGITS < 0]}")
    assert np.isclose(float(loss), probs, rtol=1e-5) and not np.isclose(float(loss), logits, rtol=1e-2)
    assert np.allclose(grad, probs_grad, atol=1e-6) and not np.any(grad[LOGITS < 0])


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_default_reads_scores_as_probabilities()
    print("confirmed: ce-default-takes-probabilities")
