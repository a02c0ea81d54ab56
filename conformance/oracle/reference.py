"""NumPy reference oracle: the semantics the spec expects, in float64.

The pure functions below are the textbook update rules; `ReferenceRunner` drives them through the
same adapter protocol as the real frameworks, so every "reference" check compares a framework's
observation with what this module computes for the same scenario. Its stance, stated once:
- a parameter without a gradient (None) is skipped by the optimizer: no decay, no momentum;
- the default gradient clearing behaves like clearing to None;
- clearing to zeros zero-fills existing gradients (it creates none);
- weight_decay is L2 added to the gradient for sgd/momentum/adam, decoupled for adamw;
- per-parameter regularizers replace the optimizer's coefficient for that parameter;
- global-norm clipping spans the optimizer's parameters that have a gradient (less `no_clip`);
  per-variable clipping (`clip_norm`) clips each of them alone; clipping acts on the gradient
  before L2 decay is added to it;
- `no_decay` parameters get neither coupled nor decoupled decay, nor do those whose name (`layer.role`, as
  torch's named_parameters() gives it) contains a part of `no_decay_names`;
- BatchNorm running stats: new = (1 - momentum) * old + momentum * batch, variance unbiased; a train step
  that leaves it one value per channel raises, as torch's does;
- LayerNorm normalises each sample over its features (biased variance) and has no running stats;
- Dropout is the identity in eval mode; in train mode it draws its own mask (only qualitative
  checks can look at such a step and after it);
- an Embedding's gradient is dense, as torch's default: zero in the rows not looked up this step
  (so decay and optimizer state still move them), and zero in the padding row;
- running statistics get no gradient, even when an optimizer holds them;
- freezing stops a parameter's gradient only: a frozen BatchNorm in a train step still
  normalises with the batch and updates its statistics; unfreezing resumes its gradient;
- a learning-rate change applies from the next update on, to decoupled decay too (lr * wd);
- a setting left to "default" takes torch's constructor default (REFERENCE_DEFAULTS);
- backward on a loss left per sample (a vector) raises, as torch's does;
- a cross-entropy is torch's CrossEntropyLoss (cross_entropy below): logits, the mean over the samples not
  ignored (an all-ignored batch: loss NaN, gradient zero), label -100 ignored by default;
- a bias left to default exists (torch's Linear and Conv2d have one);
- every layer is registered and reached by train/eval, whatever container holds it.

`ReferenceRunner(variants=...)` runs the same scenario with named variants of these semantics: each
variant (oracle/variants/) declares the points of `Semantics` (oracle/semantics.py) it changes, and the
runner reads only those points: the executable form of a framework's documented behaviour.
"""
from __future__ import annotations

import copy
import re

import numpy as np

from ..runners.base import InProcess, Offers, Runner
from ..spec import (FEATURES, OPTIMIZER_FIELDS, TORCH_IGNORE_INDEX, ClearMode, CrossEntropy, Model, Optimizer, defaults_of,
                    replica_loss_weights)
from .semantics import REFERENCE, Consulted, Semantics
from .variants import semantics


# ---------------------------------------------------------------- update rules
def sgd(p, g, lr, wd=0.0):
    return p - lr * (g + wd * p)


def momentum(p, g, buf, lr, mu, wd=0.0):
    """Heavy ball as torch/paddle/mindspore write it; the first buffer is the gradient itself."""
    g = g + wd * p
    buf = g if buf is None else mu * buf + g
    return p - lr * buf, buf


def adam(p, g, m, v, t, lr, b1, b2, eps, wd=0.0, epsilon_hat=False, bias_correction=True, g2=None):
    """Adam (Kingma & Ba) with L2 added to the gradient; t counts from 1. `epsilon_hat` adds eps to
    sqrt(v) and folds the correction into the step size; without `bias_correction` m and v are used raw;
    `g2` replaces g * g in the second moment."""
    g = g + wd * p
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * (g * g if g2 is None else g2)
    if not bias_correction:
        return p - lr * m / (np.sqrt(v) + eps), m, v
    if epsilon_hat:
        return p - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps), m, v
    m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def adamw(p, g, m, v, t, lr, b1, b2, eps, wd=0.0, **adam_variants):
    """AdamW (Loshchilov & Hutter) as torch writes it: decay the weight, then an Adam step."""
    return adam(p * (1 - lr * wd), g, m, v, t, lr, b1, b2, eps, **adam_variants)


def clip_scale(grads, max_norm):
    """Factor that brings the global L2 norm of `grads` down to max_norm (1 if already below)."""
    total = np.sqrt(sum(float(np.sum(g * g)) for g in grads))
    return 1.0 if total <= max_norm else max_norm / total


def batchnorm_running(mean, var, batch, momentum, biased=False):
    """Running statistics after one train batch; the variance uses the unbiased estimator unless `biased`
    (one sample: 0/0, NaN, as a framework that divides by n - 1 computes it)."""
    n = batch.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        unbiased = batch.var(0) * n / (n - 1) if n > 1 else np.full(batch.shape[1:], np.nan)
    return ((1 - momentum) * mean + momentum * batch.mean(0),
            (1 - momentum) * var + momentum * (batch.var(0) if biased else unbiased))


def layernorm(y, weight, bias, eps):
    """LayerNorm over the last axis; returns the output and what the backward pass needs."""
    mean, var = y.mean(-1, keepdims=True), y.var(-1, keepdims=True)
    inv_std = 1.0 / np.sqrt(var + eps)
    xhat = (y - mean) * inv_std
    return xhat * weight + bias, (xhat, inv_std)


def normalise_backward(dxhat, xhat, inv_std, axis):
    """Gradient through (x - mean) / sqrt(var + eps), statistics taken over `axis` (an int or a
    tuple; biased variance); inv_std broadcasts against xhat."""
    n = np.prod([xhat.shape[a] for a in np.atleast_1d(axis)])
    return inv_std / n * (n * dxhat - dxhat.sum(axis, keepdims=True) - xhat * (dxhat * xhat).sum(axis, keepdims=True))


def conv2d(x, weight, bias, pad):
    """Cross-correlation of x (n, c, h, w) with weight (out, c, k, k), stride 1, zero padding `pad`;
    returns the output and the input windows the backward pass needs."""
    k = weight.shape[-1]
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))),
                                                       (k, k), axis=(2, 3))  # n, c, h, w, k, k
    y = np.einsum("nchwij,ocij->nohw", windows, weight)
    return (y if bias is None else y + bias[None, :, None, None]), windows


def conv2d_backward(dy, windows, weight, pad):
    """(d weight, d bias, d x) of conv2d."""
    d_weight = np.einsum("nchwij,nohw->ocij", windows, dy)
    n, c, h, w = windows.shape[:4]
    k = weight.shape[-1]
    dx = np.zeros((n, c, h + 2 * pad, w + 2 * pad))
    for i in range(k):
        for j in range(k):
            dx[:, :, i:i + h, j:j + w] += np.einsum("nohw,oc->nchw", dy, weight[:, :, i, j])
    return d_weight, dy.sum((0, 2, 3)), dx[:, :, pad:pad + h, pad:pad + w]


# ---------------------------------------------------------------- defaults ("default" in the spec)
# torch's constructors: torch.optim.SGD/Adam/AdamW, nn.BatchNorm1d, nn.LayerNorm. The "momentum"
# optimizer is torch's SGD, whose momentum defaults to 0.
REFERENCE_DEFAULTS = {
    "sgd": {"lr": 1e-3, "weight_decay": 0.0},
    "momentum": {"lr": 1e-3, "weight_decay": 0.0, "momentum": 0.0},
    "adam": {"lr": 1e-3, "weight_decay": 0.0, "betas": (0.9, 0.999), "eps": 1e-8},
    "adamw": {"lr": 1e-3, "weight_decay": 1e-2, "betas": (0.9, 0.999), "eps": 1e-8},
    "batchnorm": {"momentum": 0.1, "eps": 1e-5},
    "layernorm": {"eps": 1e-5},
    "linear": {"bias": True},
    "conv2d": {"bias": True, "padding": "valid"},  # nn.Conv2d's padding=0
    # nn.CrossEntropyLoss
    "cross_entropy": {"reduction": "mean", "from_logits": True, "ignore_index": TORCH_IGNORE_INDEX, "label_smoothing": 0.0},
}
LAYER_FIELDS = ("momentum", "eps", "bias", "padding")  # the layer settings a case may leave to default


def resolve_defaults(model: Model, optimizer: Optimizer, sem: Semantics = REFERENCE) -> tuple[Model, Optimizer]:
    """The model and optimizer with every "default" replaced by the value the oracle uses."""
    table = {(kind, f): v for kind, fields in REFERENCE_DEFAULTS.items() for f, v in fields.items()}
    table.update(sem.defaults)
    opt = optimizer.model_copy(update={f: table[optimizer.name, f] for f in OPTIMIZER_FIELDS[optimizer.name]
                                       if getattr(optimizer, f) == "default"})
    layers = {name: layer.model_copy(update={f: table[layer.kind, f] for f in LAYER_FIELDS
                                             if getattr(layer, f) == "default" and (layer.kind, f) in table})
              for name, layer in model.layers.items()}
    return model.model_copy(update={"layers": layers}), opt


def resolve_loss(loss: CrossEntropy, sem: Semantics = REFERENCE) -> CrossEntropy:
    """The cross-entropy with every "default" replaced by the value the oracle uses (ignore_index: the
    framework's, which a variant may make None: no label is ignored)."""
    table = dict(REFERENCE_DEFAULTS["cross_entropy"])
    table.update({f: v for (kind, f), v in sem.defaults.items() if kind == "cross_entropy"})
    return loss.model_copy(update={f: table[f] for f in table if getattr(loss, f) == "default"})


def cross_entropy(scores, labels, loss: CrossEntropy, sem: Semantics = REFERENCE) -> tuple[float, np.ndarray]:
    """(loss, its gradient with respect to the scores) of a resolved cross-entropy, as torch's CrossEntropyLoss:
    the smoothed target (1 - s) * one_hot + s / classes; the samples whose label is ignored add nothing, and a
    mean divides by the others (none: the loss is 0/0, NaN, and the gradient zero). Without from_logits the
    scores are read as probabilities (ce-default-takes-probabilities): clipped to [1e-7, 1 - 1e-7] and
    renormalised, as Keras's backend writes it (log of the clipped scores into a softmax cross-entropy).
    The ce_* points of `sem` change which samples are ignored and what a mean divides by."""
    n, classes = scores.shape
    smoothing, ignore = loss.label_smoothing, loss.ignore_index
    if smoothing and sem.ce_smoothing_drops_ignore_index:
        ignore = None  # the smoothed labels are soft labels, which the ignore index does not apply to
    kept = labels != ignore if ignore is not None else np.ones(n, bool)
    outside = labels[kept][(labels[kept] < 0) | (labels[kept] >= classes)]
    if outside.size:  # as torch's nll_loss (NumPy would wrap a negative label around)
        raise IndexError(f"Target {outside[0]} is out of bounds.")
    target = np.zeros_like(scores)
    target[np.flatnonzero(kept), labels[kept]] = 1.0
    target = (1 - smoothing) * target + smoothing / classes * kept[:, None]
    if loss.from_logits:
        shifted = scores - scores.max(1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        d_scores = np.exp(log_p) * target.sum(1, keepdims=True) - target
    else:
        eps = 1e-7
        clipped = np.clip(scores, eps, 1 - eps)
        total = clipped.sum(1, keepdims=True)
        log_p = np.log(clipped) - np.log(total)
        inside = (scores >= eps) & (scores <= 1 - eps)  # the clip passes the gradient only there
        d_scores = (target.sum(1, keepdims=True) / total - target / clipped) * inside
    per_sample = -(target * log_p).sum(1)
    if loss.reduction == "sum":
        return float(per_sample.sum()), d_scores
    count = int(kept.sum())
    if ignore is not None and ignore < 0 and sem.ce_negative_ignore_mean_over_batch:
        count = n
    if smoothing and loss.ignore_index is not None and loss.ignore_index >= 0 \
            and sem.ce_smoothing_mean_over_classes:
        count = n * classes  # the ignore index counted over the smoothed label's entries, none of which equals it
    if not count:
        nan_grad = sem.ce_all_ignored_grad_nan  # 1/0 reaches the masked entries: inf * 0
        return (0.0 if sem.ce_all_ignored_loss_zero else float("nan")), \
            np.full_like(d_scores, np.nan) if nan_grad else np.zeros_like(d_scores)
    return float(per_sample.sum() / count), d_scores / count


# ---------------------------------------------------------------- default initialization ("init: default")
# How a layer's parameters are drawn when its user sets no initializer: (family, scale) by (layer kind, role),
# the scale a function of the layer's (fan_in, fan_out): the bound of a uniform draw, the standard deviation of
# a normal or truncated-normal one (truncated at two standard deviations of the normal it cuts), a constant's
# value. The reference is torch's constructors (kaiming_uniform_(a=sqrt(5)) and its bias bound, N(0, 1) for
# an embedding, ones and zeros for a normalisation); an init variant replaces some entries (Semantics.init).
NORM_INIT = {("weight",): ("constant", lambda fi, fo: 1.0), ("bias",): ("constant", lambda fi, fo: 0.0),
             ("running_mean",): ("constant", lambda fi, fo: 0.0), ("running_var",): ("constant", lambda fi, fo: 1.0)}
REFERENCE_INIT = {
    **{(kind, role): ("uniform", lambda fi, fo: 1 / np.sqrt(fi)) for kind in ("linear", "conv2d") for role in ("weight", "bias")},
    ("embedding", "weight"): ("normal", lambda fi, fo: 1.0),
    **{(kind, role): init for kind in ("batchnorm", "layernorm") for (role,), init in NORM_INIT.items()},
}


def fans(layer) -> tuple[int, int]:
    """(fan_in, fan_out) of a layer's weight: a conv's count its kernel's receptive field."""
    if layer.linear:
        return layer.linear
    if layer.conv2d:
        c_in, c_out, k = layer.conv2d
        return c_in * k * k, c_out * k * k
    if layer.embedding:
        return layer.embedding
    return layer.width, layer.width


def default_init(layer, role: str, shape, sem: Semantics, rng) -> np.ndarray:
    """A draw of one parameter (or statistic) the way a framework's constructor initializes it."""
    family, scale = {**REFERENCE_INIT, **sem.init}[layer.kind, role]
    value = scale(*fans(layer))
    if family == "constant":
        out = np.full(shape, value)
    elif family == "uniform":
        out = rng.uniform(-value, value, shape)
    elif family == "normal":
        out = rng.normal(0.0, value, shape)
    else:  # truncated_normal: a normal cut at +-2 of its own std, scaled so that the result has std `value`
        out = np.clip(rng.normal(size=shape), -2, 2)
        while np.any(np.abs(out) >= 2):  # redraw what the cut left at the bounds
            redo = np.abs(out) >= 2
            out[redo] = rng.normal(size=int(redo.sum()))
        out = out * value / 0.8796256610342398
    if layer.embedding and layer.padding_idx is not None and role == "weight":
        out[layer.padding_idx] = 0.0  # torch zeroes the padding row at construction
    return out


# ---------------------------------------------------------------- scenario oracle
PLAIN_CONTAINERS = ("plain_list", "plain_dict", "plain_tuple")


class ReferenceRunner(Runner):
    framework = "reference"
    features = frozenset(FEATURES)
    offers = Offers(devices=("cpu",), runs=({}, {"replicas": "2"}))
    # every replica of a data-parallel step in turn (forward_replicas), as many as the case asks, in any run
    parallelism = InProcess(any_replicas=True)

    def __init__(self, run=None, variants=(), **axes):
        super().__init__(run, **axes)
        self.variants = frozenset(variants)
        self.sem = Consulted(semantics(variants))  # the points this run reads: judge.explain skips what it did not

    @staticmethod
    def version() -> str:
        return np.__version__

    def build(self, model: Model, values):
        self.given_model = model
        self.model, _ = resolve_defaults(model, Optimizer(name="sgd"), self.sem)
        self.values_ = {k: np.asarray(v, dtype=np.float64).copy() for k, v in values.items()}
        rng = np.random.default_rng(0)
        for name in self.values_:  # init: default: the constructor's draw replaces the case's values
            layer, role = name.split(".")
            if model.layers[layer].init == "default":
                self.values_[name] = default_init(model.layers[layer], role, self.values_[name].shape, self.sem, rng)
        # a bias its default left out: zero, never trained, in no parameter collection
        self.absent = {f"{name}.bias" for name, layer in self.model.layers.items()
                       if layer.bias is False and f"{name}.bias" in self.values_}
        for name in self.absent:
            self.values_[name] = np.zeros_like(self.values_[name])
        self.grads_ = {k: None for k in self.values_}
        frozen = set()
        for name in model.frozen:
            frozen |= {n for n in self.values_ if n == name or n.startswith(name + ".")}
        self.frozen = frozen
        self.frozen_layers = {name for name in model.frozen if name in model.layers}  # the layer-level switch
        plain = model.container in PLAIN_CONTAINERS
        self.unregistered = set(model.contained) if plain else set()
        self.compiled_modes = {}  # step path -> the mode its gradient function was first called in
        self.compiled_paths = set()  # paths run before: compiled-first-call-sets-grads
        self.compiled_frozen = {}  # step path -> what was frozen at its first call: compiled-keeps-first-frozen
        self._path_frozen = set()
        self.decayed_ = set()  # parameters an update applied weight decay to
        self.dropout_rng = np.random.default_rng(0)
        self.drew_random = False
        self.lookup_squares = {}  # adam-squares-each-lookup: embedding weight -> its lookups' squares, summed
        self.replica_statistics = {}  # data parallelism: replica (but 0) -> its own running statistics
        self.unreduced = set()  # data parallelism: trainable parameters the last backward gave no gradient
        self.apart = set()  # data parallelism: parameters replicas hold other values of (an uncombined update)
        self.own_statistics = {}  # replica-stats-read-averaged: replica 0's own statistics (values_ holds the mean)

    def _param(self, layer: str, role: str) -> str:
        tie = self.model.layers[layer].tie
        return f"{tie or layer}.{role}"

    def _registered(self, name: str) -> bool:
        return self.sem.plain_containers_registered or name.split(".")[0] not in self.unregistered

    def trainable(self):
        return {k: k not in self.frozen and k not in self.absent and k.split(".")[1] in ("weight", "bias")
                for k in self.values_}

    def make_optimizer(self, optimizer: Optimizer):
        self.given_opt = optimizer
        _, optimizer = resolve_defaults(self.given_model, optimizer, self.sem)
        self.opt = optimizer
        if optimizer.params == "default":
            self.opt_params = self._collection()
        elif optimizer.params == "all":
            self.opt_params = [k for k in self.values_ if self._registered(k) and k not in self.absent]
        else:
            self.opt_params = list(dict.fromkeys(optimizer.params))
        self.state = {}
        self.iterations = 0  # optimizer steps taken: the shared step counter of one variant

    def _collection(self) -> list[str]:
        """The model's idiomatic parameter collection (params "default"); where it skips the frozen parameters,
        it is the trainable collection: what is frozen now is out."""
        roles = ("weight", "bias", "running_mean", "running_var") if self.sem.collection_holds_statistics \
            else ("weight", "bias")
        return [k for k in self.values_ if k.split(".")[1] in roles and self._registered(k) and k not in self.absent
                and not (k in self.frozen and self.sem.collection_skips_frozen)]

    def optimizer_params(self):
        return list(self.opt_params)

    def defaults(self):
        model, opt = resolve_defaults(self.given_model, self.given_opt, self.sem)
        out = {}
        for name in defaults_of(self.given_model, self.given_opt):
            owner, field = name.split(".")
            if field == "rate":
                out[name] = self._rate(owner)
                continue
            value = getattr(opt if owner == "optimizer" else model.layers[owner], field)
            if field == "padding":  # the pixels per side: "same" keeps the image's size at stride 1
                value = model.layers[owner].conv2d[2] // 2 if value == "same" else 0
            out[name] = list(value) if field == "betas" else value
        return out

    def _rate(self, layer: str) -> float:
        """The fraction of its inputs a dropout layer zeroes in train mode: its rate, or for a rate written
        positionally where the first argument is the keep probability, 1 - rate."""
        spec = self.model.layers[layer]
        return 1 - spec.dropout if spec.positional and self.sem.dropout_positional_keeps \
            else spec.dropout

    def set_trainable(self, names, trainable):
        for name in names:
            params = {n for n in self.values_ if n == name or n.startswith(name + ".")}
            self.frozen = self.frozen - params if trainable else self.frozen | params
            if name in self.model.layers:
                self.frozen_layers = self.frozen_layers - {name} if trainable else self.frozen_layers | {name}
        if self.sem.collection_read_each_step and self.opt.params == "default":
            self.opt_params = self._collection()

    def set_lr(self, lr):
        self.opt = self.opt.model_copy(update={"lr": lr})

    def _train_mode(self, layer: str, train: bool) -> bool:
        """The mode a layer runs in: the loop's, unless the mode switch cannot reach it."""
        if self.sem.frozen_bn_inference and layer in self.frozen_layers:
            return False
        if layer in self.unregistered and self.sem.plain_contained_mode:
            return self.sem.plain_contained_mode == "train"
        return train

    def forward(self, path, x, target, train, backward, reduce=True, loss=None, touch=(), loss_rows=None):
        """The path on the batch x; the loss (returned, and back-propagated when `backward`) is over all of it, or
        over `loss_rows` only: one replica's rows of a global batch that runs forward whole, as under a synchronised
        BatchNorm, whose statistics are every replica's."""
        if backward and self.sem.compiled_grad_keeps_first_mode:
            train = self.compiled_modes.setdefault(tuple(path), train)
        tape, y = [], np.asarray(x, dtype=np.float64)
        for layer in path:
            spec = self.model.layers[self.model.layers[layer].tie or layer]
            if spec.linear and y.ndim > 2:  # an image into a linear layer: flattened channels-first
                tape.append((layer, "flatten", y.shape))
                y = y.reshape(len(y), -1)
            if spec.linear:
                tape.append((layer, "linear", y))
                y = y @ self.values_[self._param(layer, "weight")]
                if spec.bias:
                    y = y + self.values_[self._param(layer, "bias")]
            elif spec.conv2d:
                y, windows = conv2d(y, self.values_[self._param(layer, "weight")],
                                    self.values_[self._param(layer, "bias")] if spec.bias else None, spec.conv2d[2] // 2)
                tape.append((layer, "conv2d", windows))
            elif spec.dropout:
                if self._train_mode(layer, train):  # the oracle's own mask: no framework shares it
                    rate = self._rate(layer)
                    keep = self.dropout_rng.random(y.shape) >= rate
                    self.drew_random = True
                    tape.append((layer, "dropout", keep / (1.0 - rate)))
                    y = y * tape[-1][2]
            elif spec.embedding:
                tape.append((layer, "embedding", y.astype(np.int64)))
                rows = y.astype(np.int64)
                y = self.values_[self._param(layer, "weight")][rows]
                if self.sem.padding_row_looks_up_zeros and spec.padding_idx is not None:
                    y = np.where((rows == spec.padding_idx)[:, None], 0.0, y)
            elif spec.layernorm:
                y, saved = layernorm(y, self.values_[self._param(layer, "weight")],
                                     self.values_[self._param(layer, "bias")], spec.eps)
                tape.append((layer, "layernorm", saved))
            elif self._batchnorm_skipped(layer, y, train):
                tape.append((layer, "bn_skipped", None))  # y passes through; weight and bias get zeros
            else:
                rm, rv = self._param(layer, "running_mean"), self._param(layer, "running_var")
                layer_train = self._train_mode(layer, train)
                # per channel: over the batch, and over height and width for an image
                channel = (1, -1) + (1,) * (y.ndim - 2)
                if layer_train:  # one value per channel (bn-one-value-normalised): normalised to the bias
                    samples = np.moveaxis(y, 1, -1).reshape(-1, y.shape[1])
                    mean, var = samples.mean(0), samples.var(0)
                    self.values_[rm], self.values_[rv] = batchnorm_running(
                        self.values_[rm], self.values_[rv], samples, spec.momentum,
                        biased=self.sem.running_var_biased)
                else:
                    mean, var = self.values_[rm], self.values_[rv]
                inv_std = (1.0 / np.sqrt(var + spec.eps)).reshape(channel)
                xhat = (y - mean.reshape(channel)) * inv_std
                tape.append((layer, "bn_train" if layer_train else "bn_eval", (xhat, inv_std)))
                y = xhat * self.values_[self._param(layer, "weight")].reshape(channel) \
                    + self.values_[self._param(layer, "bias")].reshape(channel)
            if layer in self.model.detach_after:
                tape.clear()  # nothing before a stop_gradient receives gradient
        scores, own = y, slice(None) if loss_rows is None else list(loss_rows)
        y, target = y[own], np.asarray(target)[own]
        if loss is not None:
            try:
                value, d_scores = cross_entropy(y, np.asarray(target, dtype=np.int64),
                                                resolve_loss(loss, self.sem), self.sem)
            except IndexError:
                if self.sem.raising_step_decays:
                    self._decay_alone()
                raise
        else:
            diff = y - np.asarray(target, dtype=np.float64)
            value = float(np.mean(diff * diff))
            # a per-sample loss back-propagated as it is: the gradient of its sum (ones for each sample)
            d_scores = 2.0 * diff / (diff.size if reduce else diff.size // len(diff))
        if backward and not reduce and not self.sem.nonscalar_backward_sums:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if loss_rows is not None:  # the other rows' scores get no gradient from this loss
            spread = np.zeros_like(scores)
            spread[own] = d_scores
            d_scores = spread
        first_call = tuple(path) not in self.compiled_paths
        self._path_frozen = self.compiled_frozen.setdefault(tuple(path), set(self.frozen)) \
            if self.sem.compiled_keeps_first_frozen else set()
        self.compiled_paths.add(tuple(path))
        # a path's first compiled call overwrites: each parameter's first contribution replaces its gradient
        self._set_once = set() if first_call and self.sem.compiled_first_call_sets_grads else None
        if backward:
            self._backward(tape, d_scores * self._grad_scale)
            for layer in touch:  # loss + 0 * p.sum(): a zero gradient, added as any other
                for role in self.model.layers[layer].param_roles():
                    name = self._param(layer, role)
                    self._accumulate(name, np.zeros_like(self.values_[name]))
            self._fill_missing_grads()
        return value

    def forward_replicas(self, shards, x, target, train, backward, loss=None, touch=(), sync=True):
        """A data-parallel step, every replica in turn: `shards` is each replica's (path, rows of the global
        batch), in rank order. The reference is one device on the global batch with the mean loss: each replica's
        gradient weighs its share of the batch (with equal paths, one forward on the whole batch, BatchNorm over
        all of it). A replica-grads-* variant combines the replicas' own mean-loss gradients instead (summed, or
        averaged over the replicas), each replica normalising with its own rows' statistics; the running
        statistics are then replica 0's, the ones a run reports. Returns the global batch's mean loss.

        sync=False (no_sync) changes nothing here: combining is linear, so replicas that accumulate apart and
        combine at the next synchronised backward end where combining every backward does (the spec checks no
        gradient of such a step, where a real engine holds each replica's own).

        unused-params-refused, where the case does not declare find_unused: a backward that leaves a trainable
        parameter without a gradient is never combined (the engine's gradient bucket holding that parameter, which
        for the spec's tiny models holds them all, is never reduced), so each replica keeps its own rows' gradient
        and the replicas drift apart; every later step raises."""
        refusing = self.sem.unused_params_refused and not self.data_parallel.find_unused
        if refusing and self.unreduced:
            raise RuntimeError(f"a data-parallel step after one in which {sorted(self.unreduced)[0]} got no gradient "
                               "(an engine not told that parameters may go unused refuses it)")
        if not (refusing and train and backward):
            value = self._combined(shards, x, target, train, backward, loss, touch)
            if backward and sync and self.sem.sync_zero_fills_unreached:
                self._zero_fill_unreached()
            return value
        before = ({n: None if g is None else g.copy() for n, g in self.grads_.items()},
                  {n: v.copy() for n, v in self.values_.items()}, copy.deepcopy(self.replica_statistics))
        value = self._combined(shards, x, target, train, backward, loss, touch)
        self.unreduced = {n for n, on in self.trainable().items()
                          if on and self._registered(n) and self.grads_.get(n) is None}
        if self.unreduced:  # replica 0's own gradient, as if alone; the others update with theirs
            self.grads_, self.values_, self.replica_statistics = before
            path, rows = shards[0][0], list(shards[0][1])
            self.forward(path, np.asarray(x)[rows], np.asarray(target)[rows], train, backward, loss=loss, touch=touch)
            self.apart |= {n for n, g in self.grads_.items() if g is not None}
        return value

    def _zero_fill_unreached(self):
        """sharded-unused-grads-zero: once any parameter of the engine's model has a gradient, the flat gradient
        they all view is whole, so each trainable one without gets zeros."""
        held = [n for n, on in self.trainable().items() if on and self._registered(n)]
        if any(self.grads_.get(n) is not None for n in held):
            for name in held:
                if self.grads_.get(name) is None:
                    self.grads_[name] = np.zeros_like(self.values_[name])

    def _combined(self, shards, x, target, train, backward, loss, touch=()):
        """Every replica in turn, its gradient weighed into the combined one (module doc: forward_replicas).
        replica-clip-before-combining: each replica's share is clipped first. replica-stats-own-rows: each replica
        normalises with its own rows' statistics, the gradients weighed as one device's. replica-stats-read-averaged:
        each replica keeps its own running statistics, and what is read is their mean. A synchronised BatchNorm
        (layer `synchronized`) normalises every replica with the global batch's statistics under any of them."""
        combine = self.sem.replica_weight
        own_rows = self.sem.replica_stats_own_rows
        synchronized = any(self.model.spec(n).synchronized for path, _ in shards for n in path)
        if combine is None and not own_rows and len({tuple(path) for path, _ in shards}) == 1:
            return self.forward(shards[0][0], x, target, train, backward, loss=loss, touch=touch)
        total, value = len(x), 0.0
        weights = replica_loss_weights([len(rows) for _, rows in shards], loss)
        statistics = [n for n in self.values_ if n.split(".")[1] in ("running_mean", "running_var")]
        apart = backward and self.sem.replica_clip_before_combining and (
            self.opt.clip_global_norm is not None or self.opt.clip_norm is not None)
        if self.own_statistics:  # replica 0's own, under what was read
            self.values_.update(self.own_statistics)
        start = {n: self.values_[n].copy() for n in statistics}  # where a replica's own statistics start
        packed = [] if backward and self.sem.replica_grads_packed else None  # each replica's own contribution
        # what each replica held before this step (compiled-first-call-sets-grads drops a replica's own share)
        self._replica_start = {n: None if g is None else g.copy() for n, g in self.grads_.items()}
        try:
            for rank, (path, rows) in enumerate(shards):
                rows = list(rows)
                ours = {n: self.values_[n].copy() for n in statistics} if rank else {}  # replica 0's
                if rank:  # this replica's own statistics, which started as everyone's
                    self.values_.update(self.replica_statistics.setdefault(rank, dict(start)))
                # as one device on the global batch unless a variant combines the replicas otherwise
                weight = combine(len(rows), total, len(shards)) if combine else weights[rank]
                before = {n: None if g is None else g.copy() for n, g in self.grads_.items()}
                held = dict(self.grads_)  # the arrays themselves: one this replica reaches is replaced
                self._grad_scale = 1.0 if apart else weight
                # a synchronised BatchNorm normalises with the global batch's statistics: the replica's forward runs
                # every replica's rows, and its loss is its own rows'
                batch = (x, target, rows) if synchronized else (np.asarray(x)[rows], np.asarray(target)[rows], None)
                try:
                    value += weights[rank] * self.forward(path, *batch[:2], train, backward, loss=loss, touch=touch,
                                                          loss_rows=batch[2])
                finally:
                    self._grad_scale = 1.0
                    if rank:
                        self.replica_statistics[rank] = {n: self.values_[n].copy() for n in statistics}
                        self.values_.update(ours)
                if packed is not None:  # what this replica's backward added, and to which parameters
                    packed.append({n: g if before[n] is None else g - before[n] for n, g in self.grads_.items()
                                   if g is not None and g is not held[n] and self._registered(n)})
                if apart:  # this replica's share of the combined gradient (its own, weighed), clipped, then added
                    own = {n: g if before[n] is None or g is None else g - before[n] for n, g in self.grads_.items()}
                    live = [n for n in self.opt_params if own.get(n) is not None]
                    scale = self._clip_scales({n: weight * own[n] for n in live}, live)
                    self.grads_ = {n: before[n] if n not in scale else
                                   (0.0 if before[n] is None else before[n]) + weight * scale[n] * own[n]
                                   for n in self.grads_}
            if packed is not None:
                for name, g in self._reduced_by_position(packed).items():
                    held = self._replica_start.get(name)
                    self.grads_[name] = g if held is None else held + g
        finally:
            self._replica_start = None
        self._clipped_apart = apart
        if self.sem.replica_stats_read_averaged and statistics:
            self.own_statistics = {n: self.values_[n].copy() for n in statistics}
            for n in statistics:
                self.values_[n] = np.mean([self.own_statistics[n]] + [s[n] for s in self.replica_statistics.values()],
                                          axis=0)
        return value

    def disagreeing(self) -> set[str]:
        """What some replica holds another value of than replica 0: its own running statistics, and the
        parameters an uncombined update moved apart (unused-params-refused)."""
        return self.apart | {n for state in self.replica_statistics.values() for n, v in state.items()
                             if not np.array_equal(v, self.values_[n], equal_nan=True)}

    def _batchnorm_skipped(self, layer: str, y, train: bool) -> bool:
        """A BatchNorm in train mode with one value per channel: raises as torch's does, or under
        bn-one-value-skipped is passed through (True); bn-one-value-normalised runs it (False)."""
        if not (self._train_mode(layer, train) and y.size // y.shape[1] == 1):
            return False
        if self.sem.bn_one_value != "raise":
            return self.sem.bn_one_value == "skip"
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {y.shape}")

    def _fill_missing_grads(self):
        """Variants whose backward hands the optimizer a gradient for every parameter it holds."""
        if self.sem.every_optimizer_param_gets_grad:
            for name in self.grads_:
                if name not in self.opt_params:
                    self.grads_[name] = None
        if self.sem.every_optimizer_param_gets_grad or (
                self.sem.zeros_clear_reaches_never_used and self.clear_mode == "zeros"):
            for name in self.opt_params:
                if self.grads_[name] is None:
                    self.grads_[name] = np.zeros_like(self.values_[name])

    def _accumulate(self, name, g):
        if name in self.frozen and not (self.sem.frozen_grad_in_optimizer and name in self.opt_params):
            return
        if name in self._path_frozen:  # compiled-keeps-first-frozen: unfrozen since the path's first call
            return
        if self._set_once is not None and name not in self._set_once:
            self._set_once.add(name)
            if self._replica_start is not None and self.grads_[name] is not None:
                # one replica of a combined step: it drops its own share of what was held before the step, not
                # what the replicas before it added
                held = self._replica_start.get(name)
                self.grads_[name] = self.grads_[name] + g - (0.0 if held is None else self._grad_scale * held)
            else:
                self.grads_[name] = g
            return
        self.grads_[name] = g if self.grads_[name] is None else self.grads_[name] + g

    def _backward(self, tape, dy):
        for layer, kind, saved in reversed(tape):
            if kind == "flatten":
                dy = dy.reshape(saved)
                continue
            if kind == "dropout":
                dy = dy * saved
                continue
            if kind == "conv2d":
                spec = self.model.spec(layer)
                w = self._param(layer, "weight")
                d_weight, d_bias, dy = conv2d_backward(dy, saved, self.values_[w], spec.conv2d[2] // 2)
                self._accumulate(w, d_weight)
                if spec.bias:
                    self._accumulate(self._param(layer, "bias"), d_bias)
                continue
            if kind == "embedding":  # a dense gradient: zero in rows not looked up, none for the padding row
                w = self._param(layer, "weight")
                g = np.zeros_like(self.values_[w])
                np.add.at(g, saved, dy)
                padding = self.model.layers[self.model.layers[layer].tie or layer].padding_idx
                if padding is not None and not self.sem.padding_row_gets_gradient:
                    g[padding] = 0.0
                self._accumulate(w, g)
                if self.sem.adam_squares_each_lookup and self.grads_[w] is not None:
                    squares = np.zeros_like(g)  # each lookup's slice squared, then summed per row
                    np.add.at(squares, saved, dy * dy)
                    if padding is not None:
                        squares[padding] = 0.0
                    self.lookup_squares[w] = self.lookup_squares.get(w, 0.0) + squares
                continue
            if kind == "bn_skipped":  # bn-one-value-skipped: zero, not none, so decay and momentum still act
                for role in ("weight", "bias"):
                    self._accumulate(self._param(layer, role), np.zeros_like(self.values_[self._param(layer, role)]))
                continue
            if kind == "linear":
                w = self._param(layer, "weight")
                self._accumulate(w, saved.T @ dy)
                if self.model.layers[self.model.layers[layer].tie or layer].bias:
                    self._accumulate(self._param(layer, "bias"), dy.sum(0))
                dy = dy @ self.values_[w].T
            else:
                xhat, inv_std = saved
                # LayerNorm: the sample's own statistics (last axis); BatchNorm: the channel's, over
                # the batch (and height and width of an image)
                stats = -1 if kind == "layernorm" else (0, *range(2, xhat.ndim))
                params = tuple(range(xhat.ndim - 1)) if kind == "layernorm" else stats
                shape = (1, -1) + (1,) * (xhat.ndim - 2) if kind != "layernorm" else (-1,)
                gamma = self.values_[self._param(layer, "weight")].reshape(shape)
                self._accumulate(self._param(layer, "weight"), (dy * xhat).sum(params))
                self._accumulate(self._param(layer, "bias"), dy.sum(params))
                dxhat = dy * gamma
                if kind == "layernorm" and self.sem.frozen_layernorm_grad_ignores_weight \
                        and self._param(layer, "weight") in self.frozen:
                    dxhat = dy
                if kind == "bn_eval" and self.sem.statistics_differentiated:
                    # the statistics the optimizer holds get the gradient through the normalisation
                    for role, g in (("running_mean", -(dxhat * inv_std).sum(stats)),
                                    ("running_var", -0.5 * (dxhat * xhat * inv_std ** 2).sum(stats))):
                        if self._param(layer, role) in self.opt_params:
                            self._accumulate(self._param(layer, role), g)
                dy = dxhat * inv_std if kind == "bn_eval" else normalise_backward(dxhat, xhat, inv_std, stats)

    clear_mode: ClearMode = "default"
    _set_once: set | None = None
    _replica_start: dict | None = None  # forward_replicas: the gradients held when the combined step began
    _grad_scale = 1.0  # a data-parallel replica's weight in the combined gradient (forward_replicas)
    _clipped_apart = False  # replica-clip-before-combining: the replicas' gradients were clipped already

    def clear_grads(self, mode: ClearMode):
        if mode == "default" and self.sem.default_clear == "zeros":
            mode = "zeros"
        self.clear_mode = mode
        self.lookup_squares = {}
        for name, g in self.grads_.items():
            if self.sem.clear_skips_frozen and name in self.frozen:
                continue
            self.grads_[name] = np.zeros_like(g) if (mode == "zeros" and g is not None) else None

    def _decay(self, name: str) -> tuple[float, float]:
        """(coupled L2 coefficient added to the gradient, decoupled coefficient) for one parameter."""
        opt, sem = self.opt, self.sem
        if name in opt.no_decay or self._excluded_by_name(name) or self._excluded_by_ndim(name):
            return 0.0, 0.0
        decoupled = opt.name == "adamw" or sem.decoupled_decay_everywhere
        wd = opt.weight_decay
        # MindSpore: parameter groups
        grouped = opt.regularizers or opt.no_decay or opt.no_decay_names or opt.no_decay_ndim_below is not None
        if sem.no_decay_for_norm_affine and not grouped and self._is_norm_affine(name):
            wd = 0.0
        if name not in opt.regularizers:
            return (0.0, wd) if decoupled else (wd, 0.0)
        own = opt.regularizers[name]
        if decoupled and sem.regularizer_adds_to_decoupled:
            return own, wd
        return (0.0, own) if decoupled else (own, 0.0)

    def _excluded_by_name(self, name: str) -> bool:
        """Whether a part of `no_decay_names` matches the name the framework's filter sees."""
        seen, regex = self._filter_name(name), self.sem.decay_filter_regex
        return any(re.search(part, seen) if regex else part in seen for part in self.opt.no_decay_names)

    def _excluded_by_ndim(self, name: str) -> bool:
        """Whether the parameter has fewer dimensions than no_decay_ndim_below, as the framework's filter sees them
        (ndim-filter-sees-flat: 1, each a flat view)."""
        below = self.opt.no_decay_ndim_below
        return below is not None and (1 if self.sem.ndim_filter_sees_flat else self.values_[name].ndim) < below

    def _filter_name(self, name: str) -> str:
        """The name a weight-decay name filter sees for a parameter: `layer.role` as torch's
        named_parameters() gives it for a model's attribute, or the framework's own (Semantics.decay_filter_name)."""
        if self.sem.decay_filter_name is None:
            return name
        return self.sem.decay_filter_name(self.model, self.opt, *name.split("."))

    def _is_norm_affine(self, name: str) -> bool:
        """BatchNorm's or LayerNorm's weight or bias (gamma, beta)."""
        layer, role = name.split(".")
        return bool(self.model.layers[layer].width) and role in ("weight", "bias")

    def _decay_alone(self):
        """compiled-step-decays-before-raising: the decoupled decay a compiled step applies ahead of its gradients."""
        for name in self.opt_params:
            decoupled = self._decay(name)[1]
            if decoupled:
                self.values_[name] = self.values_[name] * (1 - self.opt.lr * decoupled)
                self.decayed_.add(name)

    def _clip_scales(self, grads: dict, live: list[str]) -> dict[str, float]:
        """Each live parameter's clipping factor: global-norm clipping over the clipped ones together, per-variable
        clipping over each alone (no_clip ones keep 1)."""
        opt = self.opt
        clipped = [n for n in live if n not in opt.no_clip]
        scale = dict.fromkeys(live, 1.0)
        if opt.clip_global_norm is not None and self.sem.clip_norm_per_shard and self.data_parallel:
            scale.update(self._shard_clip_scales(grads, clipped, opt.clip_global_norm))
        elif opt.clip_global_norm is not None:
            scale.update(dict.fromkeys(clipped, clip_scale([grads[n] for n in clipped], opt.clip_global_norm)))
        if opt.clip_norm is not None:
            scale.update({n: clip_scale([grads[n]], opt.clip_norm) for n in clipped})
        return scale

    def _engine_params(self) -> list[str]:
        """The parameters the data-parallel engine holds, in the order the model registers them: attributes, then
        a framework container's."""
        layers = [n for n in self.model.layers if n not in self.model.contained] + list(self.model.contained)
        return [f"{layer}.{role}" for layer in layers if not self.model.layers[layer].tie
                for role in self.model.layers[layer].param_roles() if self._registered(f"{layer}.{role}")]

    def _reduced_by_position(self, own: list[dict]) -> dict[str, np.ndarray]:
        """replica-grads-packed-by-position: each replica cuts each gradient it holds into one chunk of dim 0 per
        replica (a linear weight as (out, in), zero rows padding the last chunks), and packs, for each destination,
        its chunks one parameter after another; the reduction adds the replicas' packs by position, and each
        replica unpacks its own by the parameters it holds. A parameter's chunk on a replica that holds no gradient
        for it is NaN (none); one no replica holds has none. Different pack sizes raise, as the collective does."""
        world, order = len(own), self._engine_params()
        layout = lambda name, a: a.T if self._is_linear_weight(name) else a
        chunk_rows = {n: -(-layout(n, self.values_[n]).shape[0] // world) for n in order}

        def chunk(name, a, j):
            a = layout(name, a)
            padded = np.zeros((chunk_rows[name] * world, *a.shape[1:]))
            padded[:a.shape[0]] = a
            return padded[j * chunk_rows[name]:(j + 1) * chunk_rows[name]]
        holds = [[n for n in order if n in mine] for mine in own]
        reduced = []
        for j in range(world):
            packs = [np.concatenate([chunk(n, own[r][n], j).ravel() for n in holds[r]] + [np.zeros(0)])
                     for r in range(world)]
            if len({pack.size for pack in packs}) > 1:
                raise RuntimeError("the replicas' reduce-scatter inputs differ in size (they hold gradients of "
                                   "different parameters)")
            reduced.append(sum(packs))
        chunks = {n: [None] * world for n in order}
        for j, out in enumerate(reduced):
            at = 0
            for name in holds[j]:
                shape = (chunk_rows[name], *layout(name, self.values_[name]).shape[1:])
                chunks[name][j] = out[at:at + int(np.prod(shape))].reshape(shape)
                at += int(np.prod(shape))
        whole = {}
        for name, parts in chunks.items():
            if any(part is not None for part in parts):
                shape = layout(name, self.values_[name]).shape
                rows = [np.full((chunk_rows[name], *shape[1:]), np.nan) if part is None else part for part in parts]
                whole[name] = layout(name, np.concatenate(rows)[:shape[0]])
        return whole

    def _shard_clip_scales(self, grads: dict, clipped: list[str], max_norm: float) -> dict[str, np.ndarray]:
        """clip-norm-per-shard: the engine's model is one flat vector (its registered parameters in the order the
        model registers them, attributes then a framework container's, each flattened row-major with a linear
        weight as (out, in), each starting at a multiple of 16 bytes: 4 float32 values), padded and cut into one
        equal piece per replica; each replica clips its piece by that piece's own norm. Each clipped parameter's
        factor, element by element, in the oracle's layout."""
        flat = self._engine_params()
        stored = lambda name, a: a.T if self._is_linear_weight(name) else a  # (out, in) <-> the oracle's (in, out)
        starts, end = {}, 0
        for name in flat:
            starts[name] = -(-end // 4) * 4  # aligned to 4 values
            end = starts[name] + self.values_[name].size
        piece = -(-end // self.data_parallel.replicas)
        # each element's replica, in the parameter's flat layout
        where = {name: (start + np.arange(self.values_[name].size)) // piece for name, start in starts.items()}
        squares = np.zeros(self.data_parallel.replicas)
        for name in clipped:
            if name in where and grads[name] is not None:
                np.add.at(squares, where[name], stored(name, grads[name]).ravel() ** 2)
        factors = np.array([1.0 if np.sqrt(q) <= max_norm else max_norm / np.sqrt(q) for q in squares])
        return {name: stored(name, factors[where[name]].reshape(stored(name, self.values_[name]).shape))
                for name in clipped if name in where}

    def _is_linear_weight(self, name: str) -> bool:
        layer, role = name.split(".")
        return role == "weight" and self.model.layers[layer].linear is not None

    def update(self):
        sem = self.sem
        live = [n for n in self.opt_params if self.grads_[n] is not None
                and not (sem.step_skips_frozen and n in self.frozen)]
        # replica-clip-before-combining: each replica's gradient was clipped before the replicas' were combined
        scale = dict.fromkeys(live, 1.0) if self._clipped_apart else self._clip_scales(self.grads_, live)
        self._clipped_apart = False
        if live:
            self.iterations += 1
        for name in live:
            # replica-grads-packed-by-position: the elements no replica's shard got a gradient for (NaN) are left
            # alone, optimizer state and step count included
            unreached = np.isnan(self.grads_[name]) if sem.replica_grads_packed else None
            if unreached is not None and unreached.any():
                self._update_some(name, scale[name], ~unreached)
            else:
                self._update_one(name, scale[name])

    def _update_some(self, name, scale, reached):
        """The update of the reached elements of one parameter only (the others keep value and state)."""
        before = self.values_[name].copy()
        st = self.state.setdefault(name, {"buf": None, "m": 0.0, "v": 0.0, "t": 0})
        kept = {k: (np.full(before.shape, np.nan) if st[k] is None else np.broadcast_to(st[k], before.shape).copy())
                for k in st}
        grad = self.grads_[name]
        self.grads_[name] = np.where(reached, grad, 0.0)
        try:
            with np.errstate(all="ignore"):
                self._update_one(name, scale, step_count=np.where(reached, 1, 0))
        finally:
            self.grads_[name] = grad
        self.values_[name] = np.where(reached, self.values_[name], before)
        for k in st:
            if st[k] is not None:
                st[k] = np.where(reached, st[k], kept[k])

    def _update_one(self, name, scale, step_count=1):
        opt, sem = self.opt, self.sem
        p = self.values_[name]
        coupled, decoupled = self._decay(name)
        if coupled or decoupled:
            self.decayed_.add(name)
        g = self.grads_[name] * scale + coupled * p  # clipping acts before L2 joins the gradient
        p = p * (1 - opt.lr * decoupled)
        st = self.state.setdefault(name, {"buf": None, "m": 0.0, "v": 0.0, "t": 0})
        if opt.name == "sgd":
            p = sgd(p, g, opt.lr)
        elif opt.name == "momentum" and sem.momentum_velocity_scaled_by_lr:
            st["buf"] = -opt.lr * g if st["buf"] is None else opt.momentum * st["buf"] - opt.lr * g
            p = p + st["buf"]
        elif opt.name == "momentum":
            if st["buf"] is not None and np.isnan(st["buf"]).any():  # elements with no buffer yet start one
                st["buf"] = np.where(np.isnan(st["buf"]), g, opt.momentum * st["buf"] + g)
                p = p - opt.lr * st["buf"]
            else:
                p, st["buf"] = momentum(p, g, st["buf"], opt.lr, opt.momentum)
        else:
            st["t"] = st["t"] + step_count
            t = self.iterations if sem.adam_shared_step_counter else st["t"]
            # adam-squares-each-lookup (a sparse gradient: no coupled L2 joins it)
            squares = self.lookup_squares.get(name) if not coupled else None
            p, st["m"], st["v"] = adam(
                p, g, st["m"], st["v"], t, opt.lr, *opt.betas, opt.eps,
                epsilon_hat=sem.adam_epsilon_hat,
                bias_correction=opt.name != "adamw" or sem.adamw_bias_correction,
                g2=None if squares is None else squares * scale ** 2)
        self.values_[name] = p

    def grads(self):
        return {k: None if g is None else g.copy() for k, g in self.grads_.items()}

    def values(self):
        return {k: v.copy() for k, v in self.values_.items()}

    def decayed(self):
        return {k: k in self.decayed_ for k in self.values_}
