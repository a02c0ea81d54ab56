"""embedding-init-normal-fan-in

flax nnx: Embed built without embedding_init draws its table from variance_scaling(1.0, 'fan_in',
'normal', out_axis=0), an untruncated normal with standard deviation 1/sqrt(features): 0.25 for
Embed(1000, 16). torch's nn.Embedding draws N(0, 1).

Upstream: no upstream page states it (flax's source sets default_embed_init = variance_scaling(1.0, 'fan_in', 'normal', out_axis=0))
"""
import numpy as np
from flax import nnx


def stats(w):
    """(std, max |w| / std): about 1.73 for a uniform draw, past 3 for a normal one of this size."""
    w = np.asarray(w, dtype=np.float64)
    return w.std(), np.abs(w).max() / w.std()


def test_embed_is_normal_over_sqrt_features():
    std, spread = stats(nnx.Embed(1000, 16, rngs=nnx.Rngs(0)).embedding.get_value())
    print(f"Embed(1000, 16): std {std:.4f} (1/sqrt(16) = 0.25, torch 1.0), max/std {spread:.2f}")
    assert abs(std / 0.25 - 1) < 0.05 and spread > 3  # untruncated


if __name__ == "__main__":
    import flax
    print("flax", flax.__version__)
    test_embed_is_normal_over_sqrt_features()
    print("confirmed: embedding-init-normal-fan-in")
