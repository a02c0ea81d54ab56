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


if __name__ == "__main__":
    import flax
    print("jax", jax.__version__, "flax", flax.__version__, "optax", optax.__version__)
    test_mask_sees_flax_paths()
    print("confirmed: decay-filter-sees-flax-paths")
