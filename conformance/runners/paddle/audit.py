"""The paddle probe of `python -m conformance audit`: a user's paddle.nn.Layer, optimizer and step, in
dygraph (eager) mode only.

Gradients are read where the update reads them. Paddle's Optimizer has no step hook, so install()
sets two instance attributes on the user's optimizer, `step` and `minimize` (minimize(loss) is the
dygraph update seed 1's users call; it does not go through step()), each a wrapper that first reads
`p.grad` (or `p.main_grad`, which the update prefers where a master gradient is kept) of every
parameter the optimizer holds and the train/eval mode of the model and of every layer, then calls the
original bound method with the same arguments and returns what it returns. It changes no tensor, no
gradient and no flag; an update called from inside another (a subclass's minimize calling step) is
recorded once. uninstall() deletes the two instance attributes, or puts back the ones the user had
set there before, so the optimizer is exactly as handed over. A step that calls
`type(opt).step(opt)` directly bypasses the wrapper: the audit then reports that the optimizer never
updated.

What the model holds: `named_parameters()` (Paddle's BatchNorm keeps its running `_mean` and
`_variance` as Parameters with stop_gradient=True, so they come with it, marked statistic), the layers
of `named_sublayers()`, and what the plain Python containers of every layer's attributes hold
(walk.plain_contents), leaving out the bookkeeping every paddle.nn.Layer keeps in its __dict__
(_sub_layers, _parameters, _buffers, hooks, ...: read from a bare Layer built under a fresh
unique-name generator, so the user's parameter names do not shift). The optimizer holds what its
`_param_groups` lists (the parameters, or the groups' dicts with their parameters as lists; the
`_parameter_list` of groups keeps the user's own dicts, whose "params" may be a spent generator).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import paddle

from ...auditor.observe import AuditInputError, DecaySetting, Inventory, Layer, Param, Probe, grad_state
from ...auditor.walk import plain_contents

STATISTICS = ("_mean", "_variance")
UPDATES = ("step", "minimize")  # the optimizer's methods that update, wrapped on the instance
_NOT_SET = object()


def _type(obj) -> str:
    return type(obj).__name__


def _full_type(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _parameter_types() -> tuple[type, ...]:
    from paddle.base import framework
    return tuple(getattr(framework, name) for name in ("EagerParamBase", "Parameter") if hasattr(framework, name))


def _batchnorm_types() -> tuple[type, ...]:
    """The layers whose `_mean` / `_variance` are running statistics: BatchNorm1D/2D/3D and
    SyncBatchNorm (_BatchNormBase) and the older paddle.nn.BatchNorm."""
    found = [getattr(paddle.nn.layer.norm, "_BatchNormBase", None), getattr(paddle.nn, "BatchNorm", None)]
    return tuple(t for t in found if isinstance(t, type))


def _internals() -> frozenset:
    """The attributes every paddle.nn.Layer keeps in its __dict__ (registries, hooks, helpers), read
    from a bare Layer built under a fresh unique-name generator: the user's names do not shift."""
    with paddle.utils.unique_name.guard():
        return frozenset(vars(paddle.nn.Layer()))


def _coeff(regularizer) -> float | None:
    """The coefficient of a weight-decay setting (a regularizer, a number, a one-element Tensor or
    None); None where it cannot be read."""
    if regularizer is None:
        return 0.0
    value = regularizer if isinstance(regularizer, (int, float)) else getattr(regularizer, "_coeff", regularizer)
    try:
        value = float(value)
    except (TypeError, ValueError, RuntimeError):
        return None
    return None if math.isnan(value) else value


def _decays(coeffs) -> bool | None:
    """Whether any of several decay coefficients applies: True if one is set, None if one is unknown."""
    coeffs = list(coeffs)
    if any(c not in (None, 0.0) for c in coeffs):
        return True
    return None if None in coeffs else False


class PaddleProbe(Probe):
    framework = "paddle"

    def __init__(self, model, optimizer):
        if isinstance(model, paddle.DataParallel):
            model = model._layers  # the user's model is inside; DataParallel's own attributes are not theirs
        if not isinstance(model, paddle.nn.Layer):
            raise AuditInputError(f"model is a {_full_type(model)}, not a paddle.nn.Layer")
        if not isinstance(optimizer, paddle.optimizer.Optimizer):
            raise AuditInputError(f"optimizer is a {_full_type(optimizer)}, not a paddle.optimizer.Optimizer")
        if not paddle.in_dynamic_mode():
            raise AuditInputError("paddle is in static graph mode (paddle.enable_static()): the audit reads "
                                  "dygraph (eager) training only")
        super().__init__(model, optimizer)
        self._saved: dict = {}
        self._inside = 0
        self._updates: list[dict] = []
        self._internals = _internals()
        self._held = self._find_held()                   # id(parameter) -> its group dict, or None
        self._layers = self._find_layers()               # path -> (layer, registered)
        self._tensors = self._find_tensors()             # name -> (tensor, Param)

    # ---------------------------------------------------------------- what the model and optimizer hold
    def _attributes(self, layer) -> dict:
        return {k: v for k, v in vars(layer).items() if k not in self._internals}

    def _find_held(self) -> dict:
        groups = getattr(self.optimizer, "_param_groups", None) or self.optimizer._parameter_list or []
        held = {}
        for entry in groups:
            if isinstance(entry, dict):
                for p in entry.get("params", []):
                    held[id(p)] = entry
            else:
                held[id(entry)] = None
        return held

    def _find_layers(self) -> dict:
        layers = {"": (self.model, True)}
        layers.update({path: (m, True) for path, m in self.model.named_sublayers()})
        known = {id(m) for m, _ in layers.values()}
        queue = list(layers.items())
        types = (paddle.nn.Layer, *_parameter_types())
        while queue:
            path, (layer, _) = queue.pop(0)
            for where, found in plain_contents(self._attributes(layer), types):
                if not isinstance(found, paddle.nn.Layer) or id(found) in known:
                    continue
                base = f"{path}.{where}" if path else where
                for sub, m in [("", found), *found.named_sublayers()]:
                    if id(m) not in known:
                        known.add(id(m))
                        entry = (f"{base}.{sub}" if sub else base, (m, False))
                        layers[entry[0]] = entry[1]
                        queue.append(entry)
        return layers

    def _find_tensors(self) -> dict:
        tensors, seen = {}, set()
        batchnorms, parameter_types = _batchnorm_types(), _parameter_types()
        decay_fun = self._decay_fun()

        def add(name, tensor, layer, owner, statistic, registered):
            if id(tensor) in seen:
                return
            seen.add(id(tensor))
            in_optimizer = id(tensor) in self._held
            tensors[name] = (tensor, Param(
                name=name, layer=layer, layer_type=_type(owner), size=int(np.prod(tensor.shape)),
                trainable=not tensor.stop_gradient and not statistic, statistic=statistic,
                registered=registered, in_optimizer=in_optimizer,
                decayed=self._decayed(tensor, self._held.get(id(tensor)), statistic, decay_fun)
                if in_optimizer else None))

        for path, (layer, registered) in self._layers.items():  # registered ones come first
            statistics = {id(getattr(layer, local, None)): local for local in STATISTICS} \
                if isinstance(layer, batchnorms) else {}
            for local, p in layer.named_parameters(include_sublayers=False):
                add(f"{path}.{local}" if path else local, p, path, layer, id(p) in statistics, registered)
            for local in statistics.values():  # a version keeping them as buffers
                tensor = getattr(layer, local, None)
                if isinstance(tensor, paddle.Tensor):
                    add(f"{path}.{local}" if path else local, tensor, path, layer, True, registered)
            for where, found in plain_contents(self._attributes(layer), (paddle.nn.Layer, *parameter_types)):
                if isinstance(found, parameter_types):
                    add(f"{path}.{where}" if path else where, found, path, layer, False, False)
        return tensors

    # ---------------------------------------------------------------- weight decay
    def _decay_fun(self):
        """AdamW's apply_decay_param_fun, or None."""
        if isinstance(self.optimizer, paddle.optimizer.AdamW):
            return getattr(self.optimizer, "_apply_decay_param_fun", None)
        return None

    def _decayed(self, p, group, statistic, decay_fun) -> bool | None:
        """Whether the optimizer's weight decay applies to `p`, as paddle's update decides it; None
        for an optimizer this probe does not read (not one of paddle.optimizer's own, or one with its
        own decay rules: Lamb, LBFGS)."""
        if statistic:
            return False  # stop_gradient=True: paddle's step skips it, decay included (step-skips-frozen)
        opt = self.optimizer
        own_rules = tuple(c for c in (getattr(paddle.optimizer, n, None) for n in ("Lamb", "LBFGS"))
                          if isinstance(c, type))
        if not type(opt).__module__.startswith("paddle.optimizer") or isinstance(opt, own_rules):
            return None
        regularizer = getattr(p, "regularizer", None)  # ParamAttr's, or set by a parameter group
        if isinstance(opt, paddle.optimizer.AdamW):
            # decoupled decay, unless apply_decay_param_fun(p.name) says no; a regularizer on the
            # parameter adds L2 to its gradient besides (regularizer-adds-to-decoupled-decay)
            coeff = _coeff(group.get("weight_decay", opt._weight_decay) if group else opt._weight_decay)
            if coeff not in (None, 0.0) and decay_fun is not None:
                try:
                    coeff = coeff if decay_fun(p.name) else 0.0
                except Exception:
                    coeff = None
            return _decays([coeff, _coeff(regularizer)])
        if isinstance(opt, paddle.optimizer.Momentum):
            # an L2Decay on the parameter replaces the optimizer's (fused into the momentum op); any
            # other regularizer on it goes through the gradient and the momentum op decays nothing
            if regularizer is not None:
                return _decays([_coeff(regularizer)])
            fused = group.get("regularization_coeff") if group else getattr(opt, "_regularization_coeff", None)
            return _decays([_coeff(fused), _coeff(opt.regularization)])
        # the others add the regularizer's term to the gradient: the parameter's own, else the optimizer's
        return _decays([_coeff(regularizer if regularizer is not None else opt.regularization)])

    def _decay_settings(self) -> list[DecaySetting]:
        """AdamW's apply_decay_param_fun, called on the name (Parameter.name, e.g. linear_0.b_0, which
        is what AdamW passes it) of every parameter the optimizer holds that its step can update."""
        fun = self._decay_fun()
        if fun is None:
            return []
        excludes = []
        for name, (tensor, param) in self._tensors.items():
            if param.in_optimizer and not param.statistic:
                try:
                    if not fun(tensor.name):
                        excludes.append(name)
                except Exception:
                    return []  # the step will raise the same: that is the finding to show
        label = getattr(fun, "__qualname__", None) or repr(fun)
        return [DecaySetting(setting=f"AdamW(apply_decay_param_fun={label})"[:2000], names=[], excludes=excludes)]

    def inventory(self) -> Inventory:
        return Inventory(
            framework="paddle", version=paddle.__version__, model_type=_type(self.model),
            params=[param for _, param in self._tensors.values()],
            layers=[Layer(path=path, type=_type(m), registered=registered)
                    for path, (m, registered) in self._layers.items() if path],
            decay_settings=self._decay_settings(), has_modes=True)

    # ---------------------------------------------------------------- reading
    def values(self):
        for name, (tensor, _) in self._tensors.items():
            yield name, tensor.numpy()  # a copy in eager mode (the host array is new, never a view)

    def _at_update(self) -> None:
        grads = {}
        for name, (tensor, param) in self._tensors.items():
            if param.in_optimizer:
                grad = getattr(tensor, "main_grad", None)
                if grad is None:
                    grad = tensor.grad
                grads[name] = ("none", None) if grad is None else grad_state(grad.numpy())  # a sparse one: its rows
        training = bool(self.model.training)
        modes = {path: bool(m.training) for path, (m, _) in self._layers.items()
                 if path and bool(m.training) != training}
        self._updates.append({"grads": grads, "model_training": training, "modes": modes})

    def _wrap(self, original):
        def update(*args, **kwargs):
            if not self._inside:
                self._at_update()
            self._inside += 1
            try:
                return original(*args, **kwargs)
            finally:
                self._inside -= 1
        return update

    def install(self) -> None:
        if self._saved:
            return
        attributes = vars(self.optimizer)
        for name in UPDATES:
            original = getattr(self.optimizer, name, None)
            if callable(original):
                self._saved[name] = attributes.get(name, _NOT_SET)
                setattr(self.optimizer, name, self._wrap(original))

    def uninstall(self) -> None:
        attributes = vars(self.optimizer)
        for name, before in self._saved.items():
            if before is _NOT_SET:
                attributes.pop(name, None)
            else:
                attributes[name] = before
        self._saved = {}

    def take_updates(self) -> list[dict]:
        updates, self._updates = self._updates, []
        return updates
