"""functional-zero-filled-grads

JAX (flax nnx + optax): nnx.value_and_grad returns one array per parameter of its wrt filter, and zeros
where the loss does not depend on a parameter (a layer left out of this step's forward, a layer never
used, one behind jax.lax.stop_gradient): jax.grad never returns None. optimizer.update(model, grads)
then decays those parameters and moves them by momentum / Adam state. The reference semantics give such
a parameter no gradient at all, and the optimizer skips it.

Upstream: https://github.com/jax-ml/jax/issues/10867
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class ThreeLayers(nnx.Module):
    def __init__(self):
        rngs = nnx.Rngs(0)
        self.a, self.spare, self.b = nnx.Linear(4, 4, rngs=rngs), nnx.Linear(4, 4, rngs=rngs), nnx.Linear(4, 2, rngs=rngs)


def data():
    rng = np.random.default_rng(0)
    return tuple(jnp.asarray(rng.normal(size=s), jnp.float32) for s in ((8, 4), (8, 2)))


def test_layer_left_out_and_never_used_get_zeros_and_still_move():
    x, t = data()
    seen = []
    for label, tx in (("chain(add_decayed_weights(0.01), sgd)", optax.chain(optax.add_decayed_weights(0.01), optax.sgd(0.1))),
                      ("sgd(momentum=0.9)", optax.sgd(0.1, momentum=0.9)),
                      ("adam", optax.adam(0.1))):
        model = ThreeLayers()
        optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
        _, g = nnx.value_and_grad(lambda m: jnp.mean((m.b(m.a(x)) - t) ** 2))(model)
        optimizer.update(model, g)  # step 1 uses a
        a0, spare0 = np.asarray(model.a.kernel[...]), np.asarray(model.spare.kernel[...])
        _, g = nnx.value_and_grad(lambda m: jnp.mean((m.b(x) - t) ** 2))(model)  # step 2 leaves a out
        assert g["a"]["kernel"][...] is not None and not np.any(np.asarray(g["a"]["kernel"][...])), "zeros, not None"
        assert not np.any(np.asarray(g["spare"]["kernel"][...]))
        optimizer.update(model, g)
        moved_a = np.abs(np.asarray(model.a.kernel[...]) - a0).max()
        moved_spare = np.abs(np.asarray(model.spare.kernel[...]) - spare0).max()
        seen.append(f"{label}: a moved {moved_a:.2e}, never-used spare moved {moved_spare:.2e}")
        assert moved_a > 0  # decay (sgd) or the optimizer state (momentum, adam) moves the layer left out
        if label.startswith("chain"):
            assert moved_spare > 0  # decay moves the never-used layer too
    print("left out / never used, zero gradients; " + "; ".join(seen))


def test_layer_behind_stop_gradient_gets_zeros_and_is_decayed():
    x, t = data()
    model = ThreeLayers()
    optimizer = nnx.Optimizer(model, optax.chain(optax.add_decayed_weights(0.01), optax.sgd(0.1)), wrt=nnx.Param)
    before = np.asarray(model.a.kernel[...])
    _, g = nnx.value_and_grad(lambda m: jnp.mean((m.b(jax.lax.stop_gradient(m.a(x))) - t) ** 2))(model)
    assert not np.any(np.asarray(g["a"]["kernel"][...]))
    optimizer.update(model, g)
    np.testing.assert_allclose(np.asarray(model.a.kernel[...]), before * (1 - 0.1 * 0.01), rtol=1e-6)  # decay alone
    print("behind stop_gradient: zero gradient, moved by decay alone")


if __name__ == "__main__":
    print("jax", jax.__version__)
    test_layer_left_out_and_never_used_get_zeros_and_still_move()
    test_layer_behind_stop_gradient_gets_zeros_and_is_decayed()
    print("confirmed: functional-zero-filled-grads")
