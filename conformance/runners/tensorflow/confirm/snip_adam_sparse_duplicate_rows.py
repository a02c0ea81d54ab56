"""A Keras Embedding's gradient is a tf.IndexedSlices, handed to the optimizer as is.

1. Rows not looked up: the optimizer's decay and momentum / Adam state still move them (m and v are
   dense variables): the same as handing it the dense gradient, in Keras 2 and Keras 3.
2. A row looked up twice in one batch: Keras 3's Adam/AdamW (update_step in keras.ops) squares each
   lookup's slice before the duplicates are summed, so v gets g1^2 + g2^2, not (g1 + g2)^2, and the
   update differs from the dense gradient's. Keras 2 (TF 2.15) matches the dense gradient.
3. Embedding(mask_zero=True) is no padding_idx: in a custom loop row 0 still gets its gradient."""
import os, warnings
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
warnings.simplefilter("ignore")
import numpy as np, tensorflow as tf, keras

print("tensorflow", tf.__version__, "keras", keras.__version__)
OPTIMIZERS = {"sgd+decay": lambda: keras.optimizers.SGD(0.1, weight_decay=0.1),
              "momentum": lambda: keras.optimizers.SGD(0.1, momentum=0.9),
              "adam": lambda: keras.optimizers.Adam(0.1),
              "adamw": lambda: keras.optimizers.AdamW(0.1, weight_decay=0.1)}


def train(make, batches, densify):
    emb = keras.layers.Embedding(4, 2)
    emb.build((None,))
    emb.embeddings.assign(np.ones((4, 2), np.float32))
    opt = make()
    for idx in batches:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(emb(tf.constant(idx, tf.int64)) * np.array([[1.0, 2.0]], np.float32))
        g = tape.gradient(loss, emb.embeddings)
        assert isinstance(g, tf.IndexedSlices)
        opt.apply_gradients([(tf.convert_to_tensor(g) if densify else g, emb.embeddings)])
    return emb.embeddings.numpy()


print("1. rows 0 then 1 looked up; row 0 after step 2, row 2 (never looked up):")
for name, make in OPTIMIZERS.items():
    w, dense = train(make, [[0], [1]], False), train(make, [[0], [1]], True)
    print(f"   {name:9s} row 0 {w[0]}  row 2 {w[2]}  same as the dense gradient: {np.allclose(w, dense)}")
print("2. batches [1, 1], [2], [1, 3] (row 1 twice in the first):")
for name in ("momentum", "adam", "adamw"):
    w, dense = train(OPTIMIZERS[name], [[1, 1], [2], [1, 3]], False), train(OPTIMIZERS[name], [[1, 1], [2], [1, 3]], True)
    print(f"   {name:9s} row 1 IndexedSlices {w[1]}  dense {dense[1]}  equal: {np.allclose(w, dense)}")

emb, out = keras.layers.Embedding(4, 2, mask_zero=True), keras.layers.Dense(1)
emb.build((None,))
out.build((None, 2))
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(out(emb(tf.constant([0, 3], tf.int64))) ** 2)
print("3. mask_zero=True, row 0's gradient:", tf.convert_to_tensor(tape.gradient(loss, emb.embeddings)).numpy()[0])
