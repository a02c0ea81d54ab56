"""bn-one-value-normalised

flax nnx: BatchNorm in train mode on a batch of one vector does not raise (torch's nn.BatchNorm1d raises
"Expected more than 1 value per channel when training"): it normalises the single value to zero, so the
output is the bias and no gradient reaches the input or the scale, and the running variance takes the
batch's biased variance, 0.

Upstream: no upstream page states it
"""
import numpy as np
from flax import nnx


def test_batch_of_one_normalises_to_bias():
    import jax.numpy as jnp
    bn = nnx.BatchNorm(4, momentum=0.9, rngs=nnx.Rngs(0))
    bn.bias.set_value(jnp.full((4,), 0.5))
    bn.train()
    x = jnp.asarray([[1.0, 2.0, 3.0, 4.0]])
    dx = nnx.grad(lambda m, v: jnp.sum(m(v) * jnp.asarray([[1.0, 2.0, 3.0, 4.0]])), argnums=1)(bn, x)
    y = bn(x)
    print("output", np.asarray(y), "| mean", np.asarray(bn.mean.get_value()), "var", np.asarray(bn.var.get_value()),
          "| x grad", np.asarray(dx))
    assert np.allclose(y, 0.5, atol=1e-3) and np.allclose(dx, 0.0, atol=1e-3)
    assert np.all(np.asarray(bn.var.get_value()) < 1.0)  # moved towards 0, the batch's variance


if __name__ == "__main__":
    import flax
    print("flax", flax.__version__)
    test_batch_of_one_normalises_to_bias()
    print("confirmed: bn-one-value-normalised")
