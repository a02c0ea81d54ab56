"""layernorm-default-eps-1e-6

flax nnx: nnx.LayerNorm(num_features, *, epsilon=1e-06): built without epsilon it adds 1e-6 to the
variance (torch's LayerNorm 1e-5).

Upstream: https://flax.readthedocs.io/en/latest/api_reference/flax.nnx/nn/normalization.html
"""
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx


def test_default_layernorm_adds_1e_6():
    ln = nnx.LayerNorm(3, rngs=nnx.Rngs(0))
    assert ln.epsilon == 1e-6
    x = np.array([[-0.001, 0.0, 0.001]])  # a variance of 6.7e-7: the epsilon shows
    y = np.asarray(ln(jnp.asarray(x, jnp.float32)))
    want = (x - x.mean()) / np.sqrt(x.var() + 1e-6)
    print(f"LayerNorm output {y}, with eps 1e-6 {want}")
    np.testing.assert_allclose(y, want, atol=2e-3)
    assert not np.allclose(y, (x - x.mean()) / np.sqrt(x.var() + 1e-5), atol=2e-3)


if __name__ == "__main__":
    print("jax", jax.__version__)
    test_default_layernorm_adds_1e_6()
    print("confirmed: layernorm-default-eps-1e-6")
