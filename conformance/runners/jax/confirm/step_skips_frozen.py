"""step-skips-frozen

optax: a frozen parameter the optimizer holds gets its gradient (jax.grad differentiates every leaf the
update needs), and optax.multi_transform({"trainable": tx, "frozen": optax.set_to_zero()}, labels) zeroes
its update: the step leaves it alone, decay and momentum included. The reference gives a frozen parameter
no gradient instead. A zeroing put first in a chain does not reach adamw's decoupled decay, which acts on
the parameter itself: the frozen leaf then moves.

Upstream: https://optax.readthedocs.io/en/latest/api/generated/optax.freeze.html
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax


def data():
    rng = np.random.default_rng(0)
    params = {"frozen": jnp.asarray(rng.normal(size=(4, 2)), jnp.float32),
              "train": jnp.asarray(rng.normal(size=(4, 2)), jnp.float32)}
    x = jnp.asarray(rng.normal(size=(8, 4)), jnp.float32)
    return params, x


def loss(params, x):
    return jnp.mean((x @ params["frozen"] + x @ params["train"]) ** 2)


def run(tx, steps=3):
    params, x = data()
    state = tx.init(params)
    for _ in range(steps):
        grads = jax.grad(loss)(params, x)
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    return data()[0], params, grads


def test_multi_transform_set_to_zero_skips_the_frozen_leaf():
    labels = {"frozen": "frozen", "train": "trainable"}
    for label, inner in (("sgd + decay", optax.chain(optax.add_decayed_weights(0.1), optax.sgd(0.1, momentum=0.9))),
                         ("adamw", optax.adamw(0.1, weight_decay=0.1))):
        before, after, grads = run(optax.multi_transform({"trainable": inner, "frozen": optax.set_to_zero()}, labels))
        print(f"{label}: frozen |gradient| {np.abs(grads['frozen']).max():.3g}, moved "
              f"{np.abs(after['frozen'] - before['frozen']).max():.3g}")
        assert np.abs(grads["frozen"]).max() > 0  # it has a gradient
        np.testing.assert_array_equal(after["frozen"], before["frozen"])  # and does not move
        assert not np.array_equal(after["train"], before["train"])


def test_zeroing_first_in_a_chain_does_not_stop_decoupled_decay():
    mask = {"frozen": True, "train": False}
    before, after, _ = run(optax.chain(optax.masked(optax.set_to_zero(), mask), optax.adamw(0.1, weight_decay=0.1)))
    moved = np.abs(after["frozen"] - before["frozen"]).max()
    print(f"chain(masked(set_to_zero), adamw): frozen leaf moved {moved:.3g} by decoupled decay")
    assert moved > 0
    before, after, _ = run(optax.chain(optax.adamw(0.1, weight_decay=0.1), optax.masked(optax.set_to_zero(), mask)))
    np.testing.assert_array_equal(after["frozen"], before["frozen"])  # zeroing last keeps it


if __name__ == "__main__":
    print("jax", jax.__version__)
    test_multi_transform_set_to_zero_skips_the_frozen_leaf()
    test_zeroing_first_in_a_chain_does_not_stop_decoupled_decay()
    print("confirmed: step-skips-frozen")
