"""adam-squares-each-lookup

Keras 3 (TF >= 2.21): Adam/AdamW's update_step, written with keras.ops, takes an Embedding's
tf.IndexedSlices gradient as is: ops.square squares each lookup's slice and only the following
subtraction from v sums a row's duplicates, so a row looked up twice in a batch adds g1^2 + g2^2 to v
instead of (g1 + g2)^2 and moves differently from the dense gradient. The reference semantics (and
Keras 2, TF 2.15) add the square of the summed gradient. Rows not looked up are still moved by the dense
m and v (and decayed), as with the dense gradient, in both Keras.

Upstream: no upstream page states it (keras#19992 describes the ops-level IndexedSlices handling).
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
tf.get_logger().setLevel("ERROR")  # TF 2.15: "Gradients do not exist for variables ..."
KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15 ships Keras 2, whose weights are tf.Variables

LR, B1, B2, EPS, WD = 0.1, 0.9, 0.999, 1e-7, 0.1
BATCHES = [[1, 1], [2], [1, 3]]  # row 1 looked up twice in the first batch
SCALE = np.array([1.0, 2.0], np.float32)  # loss = sum(emb(idx) * SCALE): each lookup's gradient is SCALE


def train(opt, densify):
    emb = keras.layers.Embedding(4, 2)
    emb.build((None,))
    emb.embeddings.assign(np.ones((4, 2), np.float32))
    for idx in BATCHES:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(emb(tf.constant(idx, tf.int64)) * SCALE)
        g = tape.gradient(loss, emb.embeddings)
        assert isinstance(g, tf.IndexedSlices)
        opt.apply_gradients([(tf.convert_to_tensor(g) if densify else g, emb.embeddings)])
    return emb.embeddings.numpy()


def model(squares_each_lookup, wd=0.0):
    """Keras' Adam (epsilon hat, shared step count, decoupled decay first) on the same batches, with v fed
    the sum of each lookup's square or the square of the summed gradient."""
    w, m, v = np.ones((4, 2)), np.zeros((4, 2)), np.zeros((4, 2))
    for t, idx in enumerate(BATCHES, 1):
        g, g2 = np.zeros((4, 2)), np.zeros((4, 2))
        for i in idx:
            g[i] += SCALE
            g2[i] += SCALE ** 2
        w = w - LR * wd * w
        m = m + (g - m) * (1 - B1)
        v = v + ((g2 if squares_each_lookup else g * g) - v) * (1 - B2)
        w = w - LR * np.sqrt(1 - B2 ** t) / (1 - B1 ** t) * m / (np.sqrt(v) + EPS)
    return w


def check(name, make, wd):
    sparse, dense = train(make(), False), train(make(), True)
    each, summed = model(True, wd), model(False, wd)
    print(f"{name}, batches {BATCHES}: row 1 with the IndexedSlices gradient {sparse[1]}, with the dense one "
          f"{dense[1]}; squares each lookup predicts {each[1]}, squares the sum {summed[1]}; "
          f"rows 2 (looked up in batch 2 only) {sparse[2]} and 0 (never) {sparse[0]}")
    assert np.allclose(dense, summed, rtol=1e-4)  # the dense gradient: the reference
    assert np.allclose(sparse, each, rtol=1e-4) and not np.allclose(sparse, dense, rtol=1e-3)


def test_adam_squares_each_lookup_of_a_duplicate_row():
    check("Adam", lambda: keras.optimizers.Adam(LR), 0.0)


def test_adamw_squares_each_lookup_of_a_duplicate_row():
    check("AdamW", lambda: keras.optimizers.AdamW(LR, weight_decay=WD), WD)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_adam_squares_each_lookup_of_a_duplicate_row()
    test_adamw_squares_each_lookup_of_a_duplicate_row()
    print("confirmed: adam-squares-each-lookup")
