"""decay-filter-sees-flax-paths

flax nnx + optax: a weight-decay mask (optax.adamw(..., mask=fn), optax.add_decayed_weights(wd, mask=fn))
is a function over the parameters' tree, and a filter by name sees each leaf's path in the model: `a/kernel`
for a Linear's weight, `LayerNorm/scale` and `LayerNorm/bias` for a LayerNorm, `emb/embedding` for an
embedding table. The torch recipe's filter ["bias", "LayerNorm.weight"] excludes the biases but leaves the
LayerNorm's scale decayed. The reference is torch's named_parameters(): `<layer>.weight`, `<layer>.bias`.

Upstream: no page states what a decay mask sees (explained, undocumented); this snippet shows it.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Net(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(3, 4, rngs=rngs)
        self.LayerNorm = nnx.LayerNorm(4, rngs=rngs)
        self.emb = nnx.Embed(5, 4, rngs=rngs)


def path_of(path):
    return "/".join(str(k.key) for k in path if isinstance(k, jax.tree_util.DictKey))


def test_mask_sees_flax_paths():
    net = Net(nnx.Rngs(0))
    seen = []

    def mask(tree):  # the torch recipe's filter, over the paths the mask is handed
        return jax.tree_util.tree_map_with_path(
            lambda path, _: seen.append(path_of(path)) or not any(nd in path_of(path) for nd in ["bias", "LayerNorm.weight"]),
            tree)
    for _, v in nnx.iter_graph(net):
        if isinstance(v, nnx.Param):
            v.set_value(jnp.ones_like(v.get_value()))
    opt = nnx.Optimizer(net, optax.adamw(0.1, weight_decay=0.5, mask=mask), wrt=nnx.Param)
    grads = jax.tree.map(jnp.zeros_like, nnx.state(net, nnx.Param))
    seen.clear()
    opt.update(net, grads)
    print("paths the mask sees:", sorted(set(seen)))
    assert sorted(set(seen)) == ["LayerNorm/bias", "LayerNorm/scale", "a/bias", "a/kernel", "emb/embedding"]
    after = {name: float(np.asarray(value).flat[0]) for name, value in
             [("a/kernel", net.a.kernel), ("a/bias", net.a.bias), ("LayerNorm/scale", net.LayerNorm.scale),
              ("LayerNorm/bias", net.LayerNorm.bias)]}
    print("after one decay-only step (0.95 = decayed):", after)
    assert after["a/bias"] == 1.0 and after["LayerNorm/bias"] == 1.0  # "bias" matched both biases...
    assert np.isclose(after["LayerNorm/scale"], 0.95)  # ..."LayerNorm.weight" matched nothing


def test_the_mask_sees_value_at_init_and_bare_paths_at_update():
    """nnx.Optimizer hands tx.init the nnx.Param Variables, whose pytree paths end in `.value`, and tx.update
    bare arrays: a filter on the whole path (keystr) sees `bias/value` first and `bias` after. adamw's decay is
    stateless, so its update-time call decides: a suffix filter on "bias" still excludes the bias."""
    seen = []

    def mask(tree):  # a suffix filter over the whole key path, as jax.tree_util.keystr writes it
        full = [jax.tree_util.keystr(p, simple=True, separator="/") for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
        seen.append(sorted(full))
        return jax.tree_util.tree_map_with_path(
            lambda p, _: not jax.tree_util.keystr(p, simple=True, separator="/").endswith("bias"), tree)
    lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    lin.bias.set_value(jnp.ones(2))
    opt = nnx.Optimizer(lin, optax.adamw(0.1, weight_decay=0.5, mask=mask), wrt=nnx.Param)
    opt.update(lin, jax.tree.map(jnp.zeros_like, nnx.state(lin, nnx.Param)))
    print("init sees:", seen[0], "| update sees:", seen[1], "| bias after", np.asarray(lin.bias.get_value()))
    assert seen[0] == ["bias/value", "kernel/value"] and seen[1] == ["bias", "kernel"]
    assert np.array_equal(np.asarray(lin.bias.get_value()), [1.0, 1.0])


if __name__ == "__main__":
    import flax
    print("jax", jax.__version__, "flax", flax.__version__, "optax", optax.__version__)
    test_mask_sees_flax_paths()
    test_the_mask_sees_value_at_init_and_bare_paths_at_update()
    print("confirmed: decay-filter-sees-flax-paths")
