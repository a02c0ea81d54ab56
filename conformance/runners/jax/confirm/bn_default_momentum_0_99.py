"""bn-default-momentum-0.99

flax nnx: nnx.BatchNorm(num_features, ..., momentum=0.99): momentum is the old statistic's weight, so a
BatchNorm built without it weighs each new batch 0.01 (torch's default weighs it 0.1).

Upstream: https://flax.readthedocs.io/en/latest/api_reference/flax.nnx/nn/normalization.html
"""
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx


def test_default_batchnorm_weighs_the_new_batch_0_01():
    bn = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
    assert bn.momentum == 0.99
    bn.train()
    bn(jnp.asarray([[1.0, 2.0], [3.0, 4.0]]))  # batch mean [2, 3]; the running mean starts at 0
    mean = np.asarray(bn.mean[...])
    print(f"running mean after one batch: {mean}")
    np.testing.assert_allclose(mean, 0.01 * np.array([2.0, 3.0]), rtol=1e-5)


if __name__ == "__main__":
    print("jax", jax.__version__)
    test_default_batchnorm_weighs_the_new_batch_0_01()
    print("confirmed: bn-default-momentum-0.99")
