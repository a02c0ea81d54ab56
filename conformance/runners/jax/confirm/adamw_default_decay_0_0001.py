"""adamw-default-decay-0.0001

optax: optax.adamw(learning_rate, ..., weight_decay=0.0001): built without weight_decay it decays by
1e-4, multiplied by the learning rate (torch.optim.AdamW: 0.01).

Upstream: https://optax.readthedocs.io/en/latest/api/generated/optax.adamw.html
"""
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import optax


def test_default_adamw_decays_by_lr_times_1e_4():
    assert inspect.signature(optax.adamw).parameters["weight_decay"].default == 1e-4
    params = {"w": jnp.asarray([1.0, -2.0])}
    tx = optax.adamw(0.1)
    state = tx.init(params)
    grads = {"w": jnp.zeros(2)}  # no gradient: the step is the decay alone
    updates, _ = tx.update(grads, state, params)
    new = np.asarray(optax.apply_updates(params, updates)["w"])
    print(f"after one step with a zero gradient: {new}")
    np.testing.assert_allclose(new, np.array([1.0, -2.0]) * (1 - 0.1 * 1e-4), rtol=1e-7)


if __name__ == "__main__":
    print("jax", jax.__version__)
    test_default_adamw_decays_by_lr_times_1e_4()
    print("confirmed: adamw-default-decay-0.0001")
