"""A clean, realistic flax nnx model: embedding + LayerNorm + dropout text classifier trained with
optax.adamw and the usual decay mask (no decay for LayerNorm and biases: adamw's `mask`, a function of
the parameters), the flax guides' step. Expected: no finding.

    python -m conformance audit examples/audit/jax/clean_text_classifier.py:build --framework jax
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class TextClassifier(nnx.Module):
    def __init__(self, rngs, vocab=100, dim=32, classes=4):
        self.embedding = nnx.Embed(vocab, dim, rngs=rngs)
        self.layernorm = nnx.LayerNorm(dim, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)
        self.hidden = nnx.Linear(dim, dim, rngs=rngs)
        self.out = nnx.Linear(dim, classes, rngs=rngs)

    def __call__(self, tokens):
        x = self.dropout(self.layernorm(jnp.mean(self.embedding(tokens), 1)))
        return self.out(nnx.relu(self.hidden(x)))


def decay_mask(params):
    """True where adamw decays: not LayerNorm's scale and bias, not a bias."""
    def decayed(path, _):
        where = jax.tree_util.keystr(path)
        return "layernorm" not in where and "bias" not in where
    return jax.tree_util.tree_map_with_path(decayed, params)


def build():
    model = TextClassifier(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3, weight_decay=0.01, mask=decay_mask), wrt=nnx.Param)
    rng = np.random.default_rng(0)
    tokens = jnp.asarray(rng.integers(1, 100, size=(8, 12)))
    labels = jnp.arange(8) % 4

    def loss_fn(model, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()

    def step():
        model.train()
        loss, grads = nnx.value_and_grad(loss_fn)(model, tokens, labels)
        optimizer.update(model, grads)
        return loss

    return {"model": model, "optimizer": optimizer, "step": step}
