"""default-collection-skips-frozen

flax nnx: a parameter is frozen by leaving it out of the filter that both the gradient and the optimizer
are built over (nnx.DiffState(0, trainable) for nnx.value_and_grad, wrt=trainable for nnx.Optimizer): the
optimizer never holds it and the gradient State has no entry for it, so it stays put. The reference's
optimizer, built from the model's default collection, holds a frozen parameter too (it only gets no
gradient).

Upstream: no flax page found that states it (link: null).
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Net(nnx.Module):
    def __init__(self):
        rngs = nnx.Rngs(0)
        self.a, self.b = nnx.Linear(4, 4, rngs=rngs), nnx.Linear(4, 2, rngs=rngs)


def test_frozen_parameter_is_outside_the_optimizer_and_the_gradient():
    rng = np.random.default_rng(0)
    x, t = (jnp.asarray(rng.normal(size=s), jnp.float32) for s in ((8, 4), (8, 2)))
    model = Net()
    trainable = nnx.All(nnx.Param, nnx.Not(nnx.PathContains("a")))  # layer a frozen
    optimizer = nnx.Optimizer(model, optax.chain(optax.add_decayed_weights(0.1), optax.sgd(0.1)), wrt=trainable)
    held = {path for path, _ in nnx.to_flat_state(nnx.state(model, trainable))}
    assert held == {("b", "kernel"), ("b", "bias")}, held
    before = np.asarray(model.a.kernel[...])
    _, grads = nnx.value_and_grad(lambda m: jnp.mean((m.b(m.a(x)) - t) ** 2),
                                  argnums=nnx.DiffState(0, trainable))(model)
    assert {path for path, _ in nnx.to_flat_state(grads)} == held  # no gradient entry for a
    optimizer.update(model, grads)
    np.testing.assert_array_equal(np.asarray(model.a.kernel[...]), before)  # neither decayed nor stepped
    print(f"optimizer holds {sorted(held)}; frozen a.kernel unchanged")


if __name__ == "__main__":
    print("jax", jax.__version__)
    test_frozen_parameter_is_outside_the_optimizer_and_the_gradient()
    print("confirmed: default-collection-skips-frozen")
