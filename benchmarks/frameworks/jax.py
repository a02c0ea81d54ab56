"""JAX (flax nnx + optax), the step under nnx.jit as the flax guides write it:
loss, grads = nnx.value_and_grad(loss_fn, argnums=nnx.DiffState(0, wrt))(model); optimizer.update(model, grads)"""
import os

from ..common import AUDIT_BATCH, AUDIT_IMAGE, LR, N_LAYERS, THREADS, WEIGHT_DECAY, WIDTH, batch, layer_weights
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

    @staticmethod
    def audit_target():
        """ResNet-18 written out in flax nnx (flax ships none): SGD with momentum and weight decay the optax
        way, the flax guides' step, eager: the audit refuses an update compiled by nnx.jit."""
        import jax.numpy as jnp
        import numpy as np
        import optax
        from flax import nnx
        rngs = nnx.Rngs(0)

        def conv(cin, cout, k, stride):
            return nnx.Conv(cin, cout, (k, k), strides=stride, padding=k // 2, use_bias=False, rngs=rngs)

        class Basic(nnx.Module):
            def __init__(self, cin, cout, stride):
                self.conv1, self.bn1 = conv(cin, cout, 3, stride), nnx.BatchNorm(cout, rngs=rngs)
                self.conv2, self.bn2 = conv(cout, cout, 3, 1), nnx.BatchNorm(cout, rngs=rngs)
                # one assignment: flax refuses a module on an attribute first set to None
                self.down = None if stride == 1 and cin == cout else \
                    nnx.Sequential(conv(cin, cout, 1, stride), nnx.BatchNorm(cout, rngs=rngs))

            def __call__(self, x):
                y = nnx.relu(self.bn1(self.conv1(x)))
                return nnx.relu(self.bn2(self.conv2(y)) + (x if self.down is None else self.down(x)))

        class ResNet18(nnx.Module):
            def __init__(self):
                self.stem = nnx.Sequential(conv(3, 64, 7, 2), nnx.BatchNorm(64, rngs=rngs), nnx.relu,
                                           lambda x: nnx.max_pool(x, (3, 3), (2, 2), "SAME"))
                blocks = []
                for cin, cout, stride in ((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)):
                    blocks += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
                self.blocks = nnx.List(blocks)
                self.head = nnx.Linear(512, 1000, rngs=rngs)

            def __call__(self, x):
                x = self.stem(x)
                for block in self.blocks:
                    x = block(x)
                return self.head(jnp.mean(x, (1, 2)))

        model = ResNet18()
        model.train()
        tx = optax.chain(optax.add_decayed_weights(1e-4), optax.sgd(0.1, momentum=0.9))
        optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
        images = jnp.asarray(np.random.default_rng(0).standard_normal(
            (AUDIT_BATCH, AUDIT_IMAGE, AUDIT_IMAGE, 3), dtype=np.float32))  # NHWC, flax's layout
        labels = jnp.arange(AUDIT_BATCH) % 1000

        def loss_fn(model, x, y):
            return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()

        def step():
            _, grads = nnx.value_and_grad(loss_fn)(model, images, labels)
            optimizer.update(model, grads)

        return {"model": model, "optimizer": optimizer, "step": step}
