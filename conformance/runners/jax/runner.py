"""JAX adapter (flax nnx + optax): the code a JAX user writes.

    model = Net(rngs=nnx.Rngs(0))                        # an nnx.Module holding nnx.Linear, nnx.BatchNorm ...
    optimizer = nnx.Optimizer(model, optax.adamw(lr, weight_decay=wd), wrt=nnx.Param)
    loss, grads = nnx.value_and_grad(loss_fn, argnums=nnx.DiffState(0, wrt))(model, x, t)
    optimizer.update(model, grads)

Gradients are functional, as on MindSpore: each nnx.value_and_grad call returns a fresh State with one
array per parameter of `wrt`, zeros where no gradient flows (jax.grad never returns None), and nothing is
stored on the parameters. "Default" clearing is no call at all; a step without clearing accumulates the way
JAX users do it (add the returned States with jax.tree.map, apply the sum); "zeros" is that buffer reset
to zeros. There is no None gradient to clear to: Unsupported. grads() reports the State as returned; a
parameter outside `wrt` gets none and is reported as None.

Optimizers as optax users build them: sgd is optax.sgd(lr), momentum optax.sgd(lr, momentum), adam
optax.adam, adamw optax.adamw; a coupled weight_decay (sgd, momentum, adam: L2 added to the gradient) is
optax.chain(optax.add_decayed_weights(wd), optimizer). Per-parameter coefficients and `no_decay` are
optax.multi_transform over labels, one optimizer per coefficient (0 for no_decay), the optax way to give
parameters different settings; `no_decay_names` is the `mask` of optax.adamw / add_decayed_weights, a
function over each leaf's path (`ln/scale`). Global-norm clipping is optax.clip_by_global_norm first in the chain
(wrapped in optax.masked when some parameters are left out of it). The whole transformation is built by
optax.inject_hyperparams, so a learning-rate change sets opt_state.hyperparams['learning_rate'], as the
optax docs change one between steps. optax has no default learning rate (a required argument):
Unsupported; other defaults are read from the factory's signature (an optax transformation is a pair of
closures that holds no readable setting) and from the built layers.

The optimizer's collection: "default" is nnx.Param (less the frozen); "all" is every Variable, wrt=
nnx.Any(nnx.Param, nnx.BatchStat), differentiated by the same filter (optimizer.update needs a gradient for
each leaf it holds), so BatchNorm's running statistics get the loss's gradient in an eval step; a list
names Variables by their path in the model's graph.

Freezing is the wrt filter, as flax's guides freeze a part of a model: the frozen parameters are left out
of both the gradient (nnx.DiffState(0, trainable)) and the optimizer (nnx.Optimizer(..., wrt=trainable)).
A filter is fixed when the optimizer is built (its state is made for exactly those leaves), so freezing
between steps is not in `features` (rebuilding the optimizer would drop its state): Unsupported. An
optimizer handed a frozen parameter explicitly (or through "all") holds it and needs its gradient, so there
it is frozen the optax way: optax.multi_transform({"trainable": tx, "frozen": optax.set_to_zero()}, labels),
the whole transformation (decay, clipping) on the trainable leaves only; its gradient is computed.

Layers are flax nnx's, built abstract with nnx.eval_shape (as flax restores a checkpoint: no initializer
runs, every Variable is loaded from the case's values), Dropout built concretely (its Rngs): Linear, Conv (channels-last: the batch is transposed to NHWC, kernels are HWIO,
canonical OIHW; padding "SAME"), BatchNorm (momentum is the OLD statistic's weight: a neutral momentum m
becomes 1 - m; scale/bias/mean/var are weight/bias/running_mean/running_var), LayerNorm, Embed (it has no
padding index: such cases are Unsupported), Dropout (nnx.Rngs(0)). An image into a Linear is flattened
channels-last, `x.reshape(len(x), -1)`, so that Linear's kernel rows are permuted from the canonical C, H,
W order. model.train() / model.eval() switch every module of the graph. Layers in a plain list, dict or
tuple: flax raises at assignment (a Pytree's static attribute holding data), the case's error.

A cross-entropy is optax's, as a flax user writes it: optax.softmax_cross_entropy_with_integer_labels(logits,
labels) (it takes logits: from_logits true and default alike), reduced by the user with .mean() or .sum();
with label smoothing, optax.smooth_labels(jax.nn.one_hot(labels, classes), s) into optax.softmax_cross_entropy.
optax has no default reduction (the loss comes per sample) and no ignore index: such cases are Unsupported.
A linear or conv2d layer whose bias is left to default is built without use_bias (flax's have one). A
dropout rate written positionally is nnx.Dropout(0.1, rngs=...); `<layer>.rate` is measured by calling it.

--mode graph (backend label jit) compiles the gradient function and the update with nnx.jit (graph.py): the
room's main run, the whole spec; eager runs the smoke subset (__init__.py says why). Where
JAX_COMPILATION_CACHE_DIR is set (tox sets it), JAX's persistent compilation cache keeps every computation
compiled, so a second run on the machine compiles little.
"""
from __future__ import annotations

import inspect

import numpy as np

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from . import OFFERS, graph
from ..base import Runner, Unavailable, Unsupported, build_layers, hold, loaded, nvidia_driver
from ...spec import DROPOUT_PROBE, PADDING_PROBE, CrossEntropy, padding_from, Model, Optimizer, defaults_of, param_names
from ...spec import layers as layer_kinds

ROLES = {"linear": {"weight": "kernel", "bias": "bias"}, "conv2d": {"weight": "kernel", "bias": "bias"},
         "embedding": {"weight": "embedding"}, "layernorm": {"weight": "scale", "bias": "bias"},
         "batchnorm": {"weight": "scale", "bias": "bias", "running_mean": "mean", "running_var": "var"}}


class Net(nnx.Module):
    """The user's model: its layers are attributes (or sit in an nnx.List / nnx.Dict attribute)."""


def _given(**settings):
    return {k: v for k, v in settings.items() if v != "default"}


def _first_line(fn, *args):
    """fn(*args); an exception keeps its type with the first line of its message only (flax's messages
    go on with the remedies, jax's with a traceback filter note)."""
    try:
        return fn(*args)
    except (ValueError, TypeError) as exc:
        lines = str(exc).strip().splitlines()
        if len(lines) <= 1:
            raise
        raise type(exc)(lines[0]) from exc


def _keys(path) -> tuple:
    """A pytree key path of an nnx.State as nnx's own path tuple (DictKey keys; the `.value` dropped)."""
    return tuple(k.key for k in path if isinstance(k, jax.tree_util.DictKey))


class JaxRunner(Runner):
    framework = "jax"
    offers = OFFERS
    features = frozenset({"defaults", "layernorm", "lr-schedule", "no-decay", "no-decay-names", "init-default",
                          "per-sample-loss", "no-clip", "embedding", "conv2d", "dropout", "cross-entropy",
                          "positional-args"})

    def __init__(self, run=None, **axes):
        super().__init__(run, **axes)
        platform = "gpu" if self.device == "cuda" else "cpu"
        try:
            self.jax_device = jax.devices(platform)[0]
        except RuntimeError:
            raise Unavailable(f"--device {self.device}: jax {jax.__version__} has no {platform} backend here "
                              f"(jax.devices({platform!r}) fails: a CUDA jaxlib, jax[cuda12], is needed)") from None
        jax.config.update("jax_default_device", self.jax_device)
        if jax.config.jax_compilation_cache_dir:  # JAX_COMPILATION_CACHE_DIR (tox sets it)
            # every computation goes in the cache, not only those over 1 s to compile: a run compiles
            # thousands of small ones (jit's steps, eager's single operations)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        self.graph = self.mode == "graph"

    @staticmethod
    def version() -> str:
        return str(jax.__version__)

    def accelerator(self) -> str:
        if self.device != "cuda":
            return ""
        # the precision of float32 matmuls and convolutions: JAX's default lets a GPU use TF32 (docs/devices.md, the H200 run)
        precision = jax.config.jax_default_matmul_precision or "default"
        return (f"{self.jax_device.device_kind}, driver {nvidia_driver()}, jaxlib {jax.lib.__version__}, "
                f"matmul precision {precision}")

    def packages(self) -> dict[str, str]:
        import flax
        return {"flax": flax.__version__, "optax": optax.__version__}  # most of the room's variants are theirs

    # ------------------------------------------------------------ model
    def build(self, model: Model, values):
        self.model = model
        rngs = nnx.Rngs(0)

        def make(name, spec):
            if spec.dropout:  # positional: Dropout(0.1), as ported code writes it
                if spec.positional:
                    return nnx.Dropout(spec.dropout, rngs=rngs)
                return nnx.Dropout(rate=spec.dropout, rngs=rngs)
            if spec.embedding and spec.padding_idx is not None:
                raise Unsupported("nnx.Embed has no padding index (no row is kept from the gradient)")
            if spec.init == "default":  # its initializers draw, from the model's Rngs
                return make_layer(name, spec, rngs)
            # every parameter is loaded right after: built abstract, as flax restores a checkpoint
            # (nnx.eval_shape), so no initializer runs
            return nnx.eval_shape(lambda: make_layer(name, spec, nnx.Rngs(0)))

        def make_layer(name, spec, rngs):
            if spec.linear:
                return nnx.Linear(*spec.linear, **_given(use_bias=spec.bias), rngs=rngs)
            if spec.conv2d:
                c_in, c_out, k = spec.conv2d
                padding = {} if spec.padding == "default" else {"padding": "SAME"}
                return nnx.Conv(c_in, c_out, (k, k), **padding, **_given(use_bias=spec.bias), rngs=rngs)
            if spec.embedding:
                return nnx.Embed(*spec.embedding, rngs=rngs)
            if spec.layernorm:
                return nnx.LayerNorm(spec.layernorm, **_given(epsilon=spec.eps), rngs=rngs)
            kw = _given(epsilon=spec.eps)
            if spec.momentum != "default":
                kw["momentum"] = 1.0 - spec.momentum
            return nnx.BatchNorm(spec.batchnorm, **kw, rngs=rngs)

        self.layers = layers = build_layers(model, make)  # a tie is the same module object
        attributes, container = hold(model, layers, nnx.List, nnx.Dict)
        net = Net()
        for name, layer in attributes.items():
            setattr(net, name, layer)
        if container is not None:
            _first_line(setattr, net, "blocks", container)  # flax refuses a plain list, dict or tuple here
        self.net = net
        # how the model reaches each layer (inside a transformation the model is a new object graph)
        self.where = {n: (n,) for n in attributes}
        self.where.update({n: ("blocks", n if model.container.endswith("dict") else i)
                           for i, n in enumerate(model.contained)})
        self.variables = {}
        for name in param_names(model):
            layer, role = name.split(".")
            spec = model.layers[layer]
            self.variables[name] = getattr(layers[layer], ROLES[spec.kind][role])
        paths = {id(node): path for path, node in nnx.iter_graph(net) if isinstance(node, nnx.Variable)}
        self.paths = {name: paths[id(v)] for name, v in self.variables.items()}
        self.names = {path: name for name, path in self.paths.items()}
        self.flat_input = {}  # Linear layer -> the image shape (C, H, W) it takes, or () for vectors
        for name, value in loaded(model, values).items():
            self.variables[name].set_value(jnp.asarray(self._layout(name, value, True), jnp.float32))
        self.frozen = {p for p in self.paths for f in model.frozen if p == f or p.startswith(f + ".")}
        self.acc = None

    def _layer(self, net, name):
        owner = self.model.layers[name].tie or name
        node = net
        for key in self.where[owner]:
            node = node[key] if isinstance(key, int) or key in getattr(node, "keys", lambda: ())() else getattr(node, key)
        return node

    def _layout(self, name, value, to_jax: bool):
        """A canonical value in the layout of its flax variable (to_jax), or back."""
        layer, role = name.split(".")
        if role == "weight" and self.model.layers[layer].conv2d:
            return np.transpose(value, (2, 3, 1, 0) if to_jax else (3, 2, 0, 1))  # OIHW <-> HWIO
        if role == "weight" and self.flat_input.get(layer):  # Linear rows C, H, W <-> H, W, C
            c, h, w = self.flat_input[layer]
            rows = (c, h, w, -1) if to_jax else (h, w, c, -1)
            order = (1, 2, 0, 3) if to_jax else (2, 0, 1, 3)
            return np.reshape(np.transpose(np.reshape(value, rows), order), (c * h * w, -1))
        return value

    def _filter(self, names):
        """An nnx filter selecting these canonical parameters (by their path in the model's graph)."""
        paths = {self.paths[n] for n in names}
        return lambda path, value: tuple(path) in paths

    # ------------------------------------------------------------ optimizer
    def make_optimizer(self, optimizer: Optimizer):
        self.opt_spec = optimizer
        params = [n for n in self.paths if n.split(".")[1] in ("weight", "bias")]
        if optimizer.params == "default":
            held = [n for n in params if n not in self.frozen]
            self.wrt = nnx.All(nnx.Param, nnx.Not(self._filter(self.frozen))) if self.frozen else nnx.Param
        else:  # "all": every Variable of the model, BatchNorm's BatchStat included; or these by name
            held = list(self.paths) if optimizer.params == "all" else list(dict.fromkeys(optimizer.params))
            self.wrt = nnx.Any(nnx.Param, nnx.BatchStat) if optimizer.params == "all" else self._filter(held)
        # a frozen parameter the optimizer is handed anyway is frozen the optax way: its gradient is
        # computed (the optimizer needs one per leaf) and multi_transform hands it to set_to_zero
        frozen_held = [n for n in held if n in self.frozen]
        self.held = held
        if optimizer.lr == "default":
            raise Unsupported("optax optimizers have no default learning rate: learning_rate is a required argument")
        coefficient = {}
        for name in held:
            own = 0.0 if name in optimizer.no_decay else optimizer.regularizers.get(name)
            coefficient[name] = own
        kind = optimizer.name

        def decay_mask(tree):
            """no_decay_names: the user's filter over each leaf's path in the model, its keys joined by "/"
            as flax flattens a state (`ln/scale`)."""
            return jax.tree_util.tree_map_with_path(
                lambda path, _: not any(part in "/".join(map(str, _keys(path))) for part in optimizer.no_decay_names),
                tree)
        mask = {"mask": decay_mask} if optimizer.no_decay_names else {}

        def one(learning_rate, wd):
            """The optimizer as its users build it, with one weight-decay coefficient (or 'default')."""
            b = {} if optimizer.betas == "default" else {"b1": optimizer.betas[0], "b2": optimizer.betas[1]}
            eps = _given(eps=optimizer.eps)
            if kind == "adamw":
                return optax.adamw(learning_rate, **b, **eps, **_given(weight_decay=wd), **mask)
            if kind == "sgd":
                inner = optax.sgd(learning_rate)
            elif kind == "momentum":
                inner = optax.sgd(learning_rate, **_given(momentum=optimizer.momentum))
            else:
                inner = optax.adam(learning_rate, **b, **eps)
            if wd in ("default", 0.0, 0):
                return inner  # optax.sgd / optax.adam have no weight_decay: no decay is their default
            return optax.chain(optax.add_decayed_weights(wd, **mask), inner)

        groups = sorted({c for c in coefficient.values() if c is not None})
        names = self.names

        def labels(tree):
            def label(path, _):
                own = coefficient.get(names.get(_keys(path)))
                return "optimizer" if own is None else f"decay {own}"
            return jax.tree_util.tree_map_with_path(label, tree)

        clipped = [n for n in held if n not in optimizer.no_clip and n not in frozen_held]

        def frozen_labels(tree):
            return jax.tree_util.tree_map_with_path(
                lambda path, _: "frozen" if names.get(_keys(path)) in frozen_held else "trainable", tree)

        def clip_mask(tree):
            return jax.tree_util.tree_map_with_path(lambda path, _: names.get(_keys(path)) in clipped, tree)

        def transformation(learning_rate):
            if groups:
                tx = optax.multi_transform({"optimizer": one(learning_rate, optimizer.weight_decay),
                                            **{f"decay {c}": one(learning_rate, c) for c in groups}}, labels)
            else:
                tx = one(learning_rate, optimizer.weight_decay)
            if optimizer.clip_norm is not None:
                raise Unsupported("optax has no per-tensor norm clipping")
            if optimizer.clip_global_norm is not None:
                clip = optax.clip_by_global_norm(optimizer.clip_global_norm)
                tx = optax.chain(clip if len(clipped) == len(held) - len(frozen_held) else optax.masked(clip, clip_mask), tx)
            if frozen_held:
                tx = optax.multi_transform({"trainable": tx, "frozen": optax.set_to_zero()}, frozen_labels)
            return tx
        self.opt = nnx.Optimizer(self.net, optax.inject_hyperparams(transformation)(learning_rate=optimizer.lr),
                                 wrt=self.wrt)
        self.grad_fns = {}
        self.apply = graph.compiled_update(self.opt) if self.graph else \
            (lambda model, grads: self.opt.update(model, grads))

    def set_lr(self, lr):
        self.opt.opt_state.hyperparams["learning_rate"].set_value(jnp.asarray(lr, jnp.float32))

    def defaults(self):
        """Layers: read from the built modules (nnx.BatchNorm.momentum is the old statistic's weight: the
        spec's is 1 - it). Optimizer: optax transformations are closures that hold no readable setting, so
        the value is the default of the factory's signature, the value a user who leaves it out gets."""
        factory = {"sgd": optax.sgd, "momentum": optax.sgd, "adam": optax.adam, "adamw": optax.adamw}[self.opt_spec.name]
        signature = inspect.signature(factory).parameters
        out = {}
        for name in defaults_of(self.model, self.opt_spec):
            owner, field = name.split(".")
            if owner == "optimizer":
                if field == "betas":
                    out[name] = [float(signature["b1"].default), float(signature["b2"].default)]
                elif field == "weight_decay" and "weight_decay" not in signature:
                    out[name] = 0.0  # optax.sgd / optax.adam take none: they do not decay
                elif field == "momentum":
                    out[name] = float(signature["momentum"].default or 0.0)  # None: no momentum
                else:
                    out[name] = float(signature[{"lr": "learning_rate"}.get(field, field)].default)
            else:
                layer = self.layers[owner]
                if field == "bias":
                    out[name] = layer.bias is not None
                elif field == "rate":  # measured: the fraction of ones the built layer zeroes in train mode
                    out[name] = float(jnp.mean(layer(jnp.ones(DROPOUT_PROBE), deterministic=False) == 0))
                elif field == "padding":  # measured: the side of the built layer's output on an image (NHWC)
                    c_in, _, k = self.model.layers[owner].conv2d
                    out[name] = padding_from(layer(jnp.ones((1, PADDING_PROBE, PADDING_PROBE, c_in))).shape[1], k)
                elif field == "momentum":
                    out[name] = 1.0 - float(layer.momentum)
                else:
                    out[name] = float(layer.epsilon)
        return out

    def optimizer_params(self):
        state = nnx.state(self.net, self.wrt)
        return [self.names.get(tuple(path), "/".join(map(str, path))) for path, _ in nnx.to_flat_state(state)]

    # ------------------------------------------------------------ steps
    def _loss_fn(self, path, reduce=True, loss: CrossEntropy | None = None):
        flatten = layer_kinds.flatten_before(self.model, path)
        detach = [n in self.model.detach_after for n in path]

        def loss_fn(model, x, t):
            for i, name in enumerate(path):
                if i in flatten:  # channels-last, as a user's x.reshape(len(x), -1)
                    x = x.reshape(x.shape[0], -1)
                x = self._layer(model, name)(x)
                if detach[i]:
                    x = jax.lax.stop_gradient(x)
            if loss is not None:  # optax's losses take logits and return one loss per sample
                if loss.label_smoothing in ("default", 0.0):
                    per_sample = optax.softmax_cross_entropy_with_integer_labels(x, t)
                else:
                    smoothed = optax.smooth_labels(jax.nn.one_hot(t, x.shape[-1]), loss.label_smoothing)
                    per_sample = optax.softmax_cross_entropy(x, smoothed)
                return per_sample.mean() if loss.reduction == "mean" else per_sample.sum()
            squared = (x - t) ** 2
            return jnp.mean(squared) if reduce else squared.reshape(squared.shape[0], -1).mean(1)  # per sample
        return loss_fn

    def _inputs(self, path, x):
        """The batch as the flax model takes it (images NHWC); a Linear that takes an image gets its kernel
        rows in the channels-last flatten order the first time (before any update)."""
        for name, shape in zip(path, self.model.shapes(path)):
            owner = self.model.layers[name].tie or name
            if self.model.layers[owner].linear:
                weight = f"{owner}.weight"
                if owner not in self.flat_input:
                    value = self._layout(weight, np.asarray(self.variables[weight].get_value()), False)
                    self.flat_input[owner] = shape if len(shape) == 3 else ()
                    self.variables[weight].set_value(jnp.asarray(self._layout(weight, value, True)))
                elif self.flat_input[owner] != (shape if len(shape) == 3 else ()):
                    raise Unsupported(f"Linear {name} takes inputs of two shapes: its kernel rows have one order")
        if x.ndim == 4:
            return jnp.asarray(np.transpose(x, (0, 2, 3, 1)), jnp.float32)
        return jnp.asarray(x, jnp.int32 if x.dtype.kind in "iu" else jnp.float32)

    def forward(self, path, x, target, train, backward, reduce=True, loss=None):
        if loss is not None and loss.reduction == "default":
            raise Unsupported("optax losses have no default reduction: softmax_cross_entropy_with_integer_labels "
                              "returns one loss per sample, which the user reduces with .mean() or .sum()")
        if loss is not None and loss.ignore_index is not None:
            raise Unsupported("optax losses have no ignore index: softmax_cross_entropy_with_integer_labels takes "
                              "every label as a class (a user masks the ignored samples by hand)")
        self.net.train() if train else self.net.eval()  # reaches every module of the graph
        # targets in the model's layout: a path that ends in a conv gives NHWC images; class labels as int32
        x, t = self._inputs(path, x), jnp.asarray(np.transpose(target, (0, 2, 3, 1)) if target.ndim == 4 else target,
                                                  jnp.int32 if loss is not None else jnp.float32)
        key = (tuple(path), backward, reduce, None if loss is None else tuple(loss.model_dump().values()))
        if key not in self.grad_fns:
            loss_fn = self._loss_fn(path, reduce, loss)
            fn = nnx.value_and_grad(loss_fn, argnums=nnx.DiffState(0, self.wrt)) if backward else loss_fn
            self.grad_fns[key] = graph.compiled(fn) if self.graph else fn
        if not backward:
            return float(jnp.mean(self.grad_fns[key](self.net, x, t)))
        loss, grads = _first_line(self.grad_fns[key], self.net, x, t)
        # no clear since the last grads: add the returned States (how JAX users accumulate)
        self.acc = grads if self.acc is None else jax.tree.map(jnp.add, self.acc, grads)
        return float(jnp.mean(loss))

    def clear_grads(self, mode):
        if mode == "default":
            self.acc = None  # nothing to call: the next nnx.value_and_grad returns a fresh State
        elif mode == "zeros":
            self.acc = jax.tree.map(jnp.zeros_like, nnx.state(self.net, self.wrt))
        else:
            raise Unsupported("JAX has no None gradient to clear to: nnx.value_and_grad returns an array for "
                              "every parameter of wrt, and optimizer.update needs one per parameter it holds")

    def update(self):
        if self.acc is None:
            raise Unsupported("an update without a backward pass since clearing: JAX has no gradient State to "
                              "hand optimizer.update")
        _first_line(self.apply, self.net, self.acc)

    # ------------------------------------------------------------ reading back
    def _numpy(self, name, value):
        return self._layout(name, np.asarray(value, dtype=np.float64), False)

    def grads(self):
        out = dict.fromkeys(self.paths)
        if self.acc is not None:
            for path, leaf in nnx.to_flat_state(self.acc):
                name = self.names.get(tuple(path))
                if name is not None:
                    out[name] = self._numpy(name, leaf.get_value() if isinstance(leaf, nnx.Variable) else leaf)
        return out

    def values(self):
        return {n: self._numpy(n, v.get_value()) for n, v in self.variables.items()}

    def trainable(self):
        return {n: isinstance(v, nnx.Param) and n not in self.frozen for n, v in self.variables.items()}
