"""bn-stats-differentiated

flax nnx + optax: an optimizer over all model state, nnx.Optimizer(model, tx, wrt=nnx.Any(nnx.Param,
nnx.BatchStat)), needs the gradient over the same filter, and jax.grad differentiates BatchNorm's running
statistics like any input: in an eval step they get the loss's gradient and the optimizer moves them by
it; in a train step the gradient is zero. The reference gives running statistics no gradient.

Upstream: no flax or optax page found that states it (link: null).
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Net(nnx.Module):
    def __init__(self):
        self.a, self.bn = nnx.Linear(3, 3, rngs=nnx.Rngs(0)), nnx.BatchNorm(3, rngs=nnx.Rngs(0))


def step(mode):
    x = jnp.asarray(np.random.default_rng(0).normal(size=(8, 3)), jnp.float32)
    model = Net()
    every = nnx.Any(nnx.Param, nnx.BatchStat)
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=every)
    getattr(model, mode)()
    _, grads = nnx.value_and_grad(lambda m: jnp.mean(m.bn(m.a(x)) ** 2), argnums=nnx.DiffState(0, every))(model)
    before = np.asarray(model.bn.mean[...])
    optimizer.update(model, grads)
    return np.asarray(grads["bn"]["mean"][...]), np.asarray(grads["bn"]["var"][...]), np.asarray(model.bn.mean[...]) - before


def test_eval_step_moves_the_statistics_by_their_gradient():
    g_mean, g_var, moved = step("eval")
    print(f"eval: gradient of mean {g_mean}, of var {g_var}; mean moved {moved}")
    assert np.abs(g_mean).max() > 0 and np.abs(g_var).max() > 0
    np.testing.assert_allclose(moved, -0.1 * g_mean, rtol=1e-5)


def test_train_step_gives_them_zero():
    g_mean, g_var, _ = step("train")
    print(f"train: gradient of mean {g_mean}, of var {g_var}")
    assert not np.any(g_mean) and not np.any(g_var)


if __name__ == "__main__":
    print("jax", jax.__version__)
    test_eval_step_moves_the_statistics_by_their_gradient()
    test_train_step_gives_them_zero()
    print("confirmed: bn-stats-differentiated")
