"""ce-default-ignores-no-label

Keras: SparseCategoricalCrossentropy built without ignore_class ignores no label (ignore_class=None: "all
classes are considered"), so a sample labelled -100, torch's default ignore_index, is an out-of-range class:
TF's sparse softmax cross-entropy op, which Keras calls for logits and probabilities alike, raises
InvalidArgumentError ("Received a label value of -100 which is outside the valid range of [0, C)") on the
CPU, in the loop and in fit, so the step never completes; on a GPU the op returns NaN for that sample's loss
and gradient row instead. torch's CrossEntropyLoss skips the sample (ignore_index=-100 by default).

Upstream: https://TensorFlow.org/versions/r2.6/api_docs/python/tf/nn/sparse_softmax_cross_entropy_with_logits
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
LABELS = np.array([-100, 2, 1, 1], np.int64)  # sample 0 marked "ignore" as data prepared for torch is


def raised(loss):
    with tf.device("/CPU:0"):
        try:
            loss(LABELS, tf.constant(LOGITS))
        except tf.errors.InvalidArgumentError as error:
            return error.message[error.message.find("Received"):].split(".")[0]  # past the op's node name
    return ""


def test_label_minus_100_is_out_of_range_on_the_cpu():
    for loss in (keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                 keras.losses.SparseCategoricalCrossentropy()):
        said = raised(loss)
        print(f"{type(loss).__name__}(from_logits={loss.get_config()['from_logits']}): {said or 'no error'}")
        assert "label value of -100" in said
    # told to ignore -100, Keras leaves sample 0 out as torch does: the mean over the other three
    kept = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-100)(LABELS, LOGITS)
    p = np.exp(LOGITS - LOGITS.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    torch_like = -np.log(p[[1, 2, 3], LABELS[1:]]).mean()
    print(f"with ignore_class=-100: {float(kept):.6f} (torch's mean over the samples kept {torch_like:.6f})")
    assert np.isclose(float(kept), torch_like, rtol=1e-5)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_label_minus_100_is_out_of_range_on_the_cpu()
    print("confirmed: ce-default-ignores-no-label")
