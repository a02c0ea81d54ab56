"""JAX (flax nnx + optax), the step under nnx.jit as the flax guides write it:
loss, grads = nnx.value_and_grad(loss_fn, argnums=nnx.DiffState(0, wrt))(model); optimizer.update(model, grads)"""
import os

from ..common import LR, N_LAYERS, THREADS, WEIGHT_DECAY, WIDTH, batch, layer_weights
from . import Case

# XLA's CPU client reads its thread pools' sizes from XLA_FLAGS when jax loads (before any case is
# built: asv's fork server may import jax first), so the suite's thread count is set here
if THREADS == 1 and "XLA_FLAGS" not in os.environ:
    os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


class JaxCase(Case):
    """@nnx.jit train_step(model, optimizer, x, t): nnx.value_and_grad over the trainable filter, then
    optimizer.update(model, grads). Frozen layers are left out of that filter (nnx.Optimizer's wrt and the
    gradient's DiffState), the JAX way to freeze."""

    framework = "jax"
    modules = ("jax", "flax", "optax")

    def __init__(self, mask, fraction, optimizer):
        super().__init__(mask, fraction, optimizer)
        import jax
        import jax.numpy as jnp
        import optax
        from flax import nnx
        self.jax = jax
        platform = "gpu" if self.device == "cuda" else "cpu"
        try:
            dev = jax.devices(platform)[0]
        except RuntimeError:
            raise NotImplementedError(f"CONFORMANCE_BENCH_DEVICE={self.device}: jax {jax.__version__} has no "
                                      f"{platform} backend here (a CUDA jaxlib is needed)") from None
        jax.config.update("jax_default_device", dev)

        class Stack(nnx.Module):
            def __init__(self):
                self.layers = nnx.List([nnx.Linear(WIDTH, WIDTH, rngs=nnx.Rngs(0)) for _ in range(N_LAYERS)])

        model = Stack()
        for layer, (kernel, bias) in zip(model.layers, layer_weights()):
            layer.kernel.set_value(jnp.asarray(kernel))  # flax keeps (in, out), as the suite's weights
            layer.bias.set_value(jnp.asarray(bias))
        k = self.k
        def masked(path, _):  # the first k layers of the stack
            return len(path) > 1 and path[0] == "layers" and path[1] < k
        wrt = nnx.All(nnx.Param, nnx.Not(masked)) if mask == "frozen" and k else nnx.Param
        if optimizer == "sgd_wd":
            tx = optax.chain(optax.add_decayed_weights(WEIGHT_DECAY), optax.sgd(LR[optimizer]))
        else:
            tx = optax.adamw(LR[optimizer], weight_decay=WEIGHT_DECAY)
        self.model = model
        self.opt = nnx.Optimizer(model, tx, wrt=wrt)
        start, cut, zero = self.start, self.cut, self.zero

        def loss_fn(model, x, t):
            y = x
            for i in range(start, N_LAYERS):
                y = jnp.tanh(model.layers[i](y))
                if i == cut:
                    y = jax.lax.stop_gradient(y)
            return jnp.mean((y - t) ** 2)

        @nnx.jit
        def train_step(model, optimizer, x, t):
            loss, grads = nnx.value_and_grad(loss_fn, argnums=nnx.DiffState(0, wrt))(model, x, t)
            if zero:  # the masked layers' gradients multiplied by zero before the update
                grads = jax.tree_util.tree_map_with_path(
                    lambda path, g: g * 0 if path[1].key < k else g, grads)
            optimizer.update(model, grads)
            return grads

        @nnx.jit
        def update(model, optimizer, grads):
            optimizer.update(model, grads)

        self._train_step, self._update = train_step, update
        x, t = batch()
        self.x, self.t = jnp.asarray(x), jnp.asarray(t)
        self.warm_up()

    def sync(self):
        self.jax.block_until_ready(self.model.layers[-1].kernel[...])

    def train_step(self):
        # no clearing call: each step's gradients are a fresh State
        self.grads = self._train_step(self.model, self.opt, self.x, self.t)
        self.sync()

    def optimizer_step(self):
        self._update(self.model, self.opt, self.grads)
        self.sync()
