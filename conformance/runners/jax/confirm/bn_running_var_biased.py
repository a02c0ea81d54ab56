"""bn-running-var-biased

flax nnx: nnx.BatchNorm folds the biased (1/n) batch variance into its running `var`; torch (the
reference) folds the unbiased (1/(n-1)) one. No flax page found that states which estimate it averages.

Upstream: none found (link: null)
"""
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx


def test_running_var_takes_the_biased_batch_variance():
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    bn = nnx.BatchNorm(3, momentum=0.0, rngs=nnx.Rngs(0))  # the running statistics become the batch's
    bn.train()
    bn(jnp.asarray(x))
    var = np.asarray(bn.var[...])
    print(f"running var {var}, biased {x.var(0)}, unbiased {x.var(0, ddof=1)}")
    np.testing.assert_allclose(var, x.var(0), rtol=1e-5)
    assert not np.allclose(var, x.var(0, ddof=1), rtol=1e-3)


if __name__ == "__main__":
    print("jax", jax.__version__)
    test_running_var_takes_the_biased_batch_variance()
    print("confirmed: bn-running-var-biased")
