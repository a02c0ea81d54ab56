"""embedding-init-uniform-0.05

Keras: an Embedding built without an initializer draws its table with embeddings_initializer='uniform',
RandomUniform(-0.05, 0.05): standard deviation 0.029. torch's nn.Embedding draws N(0, 1).

Upstream: https://keras.io/api/layers/core_layers/embedding/ (embeddings_initializer="uniform"),
https://www.tensorflow.org/api_docs/python/tf/keras/initializers/RandomUniform (minval=-0.05, maxval=0.05)
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


def stats(w):
    """(std, max |w| / std): about 1.73 for a uniform draw, past 3 for a normal one of this size."""
    w = np.asarray(w, dtype=np.float64)
    return w.std(), np.abs(w).max() / w.std()


def test_embedding_is_uniform_005():
    layer = keras.layers.Embedding(1000, 16)
    layer.build((None,))
    std, spread = stats(layer.embeddings)
    print(f"Embedding(1000, 16): std {std:.4f} (U(-0.05, 0.05): {0.05 / np.sqrt(3):.4f}), max |w| {float(np.abs(layer.embeddings).max()):.4f}")
    assert abs(std / (0.05 / np.sqrt(3)) - 1) < 0.05 and np.abs(layer.embeddings).max() <= 0.05


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_embedding_is_uniform_005()
    print("confirmed: embedding-init-uniform-0.05")
