"""The jax probe of `python -m conformance audit`: a user's flax nnx.Module, its nnx.Optimizer (an optax
transformation inside) and step, run eagerly. A step whose update runs compiled (under nnx.jit or
jax.jit) stops the audit with one line saying so, instead of reporting what it cannot read.

Gradients are read where the update reads them. A JAX step hands them to the optimizer as a State,
`optimizer.update(model, grads)` after `loss, grads = nnx.value_and_grad(loss_fn)(model, ...)`
(nnx.ModelAndOptimizer: `optimizer.update(grads)`). install() gives the optimizer instance a class of
its own for the audit: a subclass of its class, same name and module, whose `update` first reads what
the class's own update reads, `nnx.state(grads, optimizer.wrt)` (grad_state of each array, by its path
in the model), and each layer's mode, then calls the class's `update` with the same arguments and
returns what it returns. It changes no array and no argument; isinstance() answers as before.
uninstall() puts the instance's class back: the optimizer is exactly as handed over. (A method wrapped
on the instance instead would be a new attribute of an nnx Pytree, which its graph walks.)

A compiled update runs no Python once traced: under nnx.jit the subclass's `update` runs while tracing,
with tracers in place of values, and not at all when a trace is reused. The optimizer counts its
updates in `optimizer.step`: when an update is handed tracers, or that count grows by more than the
updates read, take_updates() raises AuditInputError saying so, after the step has run as it would.
(The audit's class is part of the graph's type, so nnx.jit traces the step again during the audit.)

What the model holds: what nnx.iter_graph(model) reaches, static attributes and their plain
containers included: every nnx.Param (a parameter; JAX has no trainable flag: a frozen one is one left
out of the optimizer's and the gradient's `wrt` filter, so it is reported not-in-optimizer, explained by
default-collection-skips-frozen) and nnx.BatchStat (a running statistic), named by its graph path
joined with dots (`blocks.0.conv1.kernel`); other Variables (Dropout's RNG state, caches) are left out.
The Modules it reaches are the layers, nnx.List / nnx.Dict included. Registered is what nnx.state(model)
holds (the model's own Variable objects): the state nnx.grad, nnx.jit, the optimizer and checkpoints
see; a Module with a Variable outside it is unregistered. flax 0.12 refuses a plain list, dict or
tuple of modules as an attribute (at assignment, or when the module's __init__ returns) and puts one
wrapped in nnx.data, or held by a pytree=False module, in the state, so a user meets an unregistered
layer only by going around those checks (object.__setattr__ after construction). What the optimizer
holds is `nnx.state(model, optimizer.wrt)`, what its update reads. Weight decay is inside optax closures
that hold no readable setting: `decayed` is None.

Modes: nnx has no model-wide mode. model.train() / model.eval() set `use_running_average` (BatchNorm)
and `deterministic` (Dropout) on every module that has them; a layer's mode is the one its attribute
gives (None: passed per call, no mode). The model's mode is the one its layers share; where they differ
it is None (a layer set apart by hand is the user's choice), and no mode-mismatch is read.
"""
from __future__ import annotations

import jax
import numpy as np
from flax import nnx

from ...auditor.observe import AuditInputError, Inventory, Layer, Param, Probe, grad_state


def _full_type(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _name(path) -> str:
    return ".".join(map(str, path))


def _mode(module):
    """True (train), False (eval) or None (no mode) of one module, as train()/eval() set it."""
    for attribute in ("use_running_average", "deterministic"):
        value = getattr(module, attribute, None)
        if isinstance(value, bool):
            return not value
    return None


def _array(value) -> np.ndarray:
    return np.array(value.get_value() if isinstance(value, nnx.Variable) else value)


class JaxProbe(Probe):
    framework = "jax"

    def __init__(self, model, optimizer):
        if not isinstance(model, nnx.Module):
            raise AuditInputError(f"model is a {_full_type(model)}, not a flax.nnx.Module")
        if not isinstance(optimizer, nnx.Optimizer):
            raise AuditInputError(f"optimizer is a {_full_type(optimizer)}, not a flax.nnx.Optimizer")
        super().__init__(model, optimizer)
        self._class = None            # the optimizer's own class while the audit's stands in
        self._updates: list[dict] = []
        self._compiled = 0            # updates handed tracers (inside nnx.jit / jax.jit)
        self._counted = None          # optimizer.step when the updates were last taken
        try:  # flax's own checks of the graph run here
            graph = list(nnx.iter_graph(model))  # static attributes and their containers too
            registered = self._ids(nnx.state(model))  # what grad, jit, the optimizer and checkpoints see
            held = self._ids(nnx.state(model, optimizer.wrt))
        except Exception as exc:
            raise AuditInputError(f"flax cannot walk the model's graph: {_first_line(exc)}") from None
        self._modules = {}  # name -> (Module, registered)
        for path, m in graph:
            if isinstance(m, nnx.Module):  # one holding Variables the state misses is unregistered
                own = [id(v) for _, v in nnx.iter_graph(m) if isinstance(v, nnx.Variable)]
                self._modules[_name(path)] = (m, all(i in registered for i in own))
        self._tensors = {}  # name -> (Variable, Param)
        for path, v in graph:
            if isinstance(v, (nnx.Param, nnx.BatchStat)):
                self._add(_name(path), v, id(v) in held, id(v) in registered)

    @staticmethod
    def _ids(state) -> set:
        """The Variables of a State (nnx.state hands out the model's own Variable objects)."""
        return {id(v) for _, v in nnx.to_flat_state(state)}

    # ---------------------------------------------------------------- what the model holds
    def _add(self, name, variable, in_optimizer, registered):
        layer = name.rsplit(".", 1)[0] if "." in name else ""
        while layer not in self._modules:  # a Variable in a container: the module holding it
            layer = layer.rsplit(".", 1)[0] if "." in layer else ""
        statistic = isinstance(variable, nnx.BatchStat)
        self._tensors[name] = (variable, Param(
            name=name, layer=layer, layer_type=type(self._modules[layer][0]).__name__,
            size=int(np.prod(np.shape(variable.get_value()))), trainable=isinstance(variable, nnx.Param),
            statistic=statistic, registered=registered, in_optimizer=in_optimizer, decayed=None))

    def inventory(self) -> Inventory:
        return Inventory(
            framework="jax", version=str(jax.__version__), model_type=type(self.model).__name__,
            params=[param for _, param in self._tensors.values()],
            layers=[Layer(path=path, type=type(m).__name__, registered=registered)
                    for path, (m, registered) in self._modules.items() if path],
            has_modes=True)

    # ---------------------------------------------------------------- reading
    def values(self):
        for name, (v, _) in self._tensors.items():
            yield name, _array(v)

    def _at_update(self, optimizer, args, kwargs):
        if isinstance(optimizer, nnx.ModelAndOptimizer):
            grads = args[0] if args else kwargs.get("grads")
        else:
            grads = args[1] if len(args) > 1 else kwargs.get("grads")
        flat = nnx.to_flat_state(nnx.state(grads, optimizer.wrt))  # what the class's update reads
        leaves = [(_name(path), leaf.get_value() if isinstance(leaf, nnx.Variable) else leaf) for path, leaf in flat]
        if any(isinstance(value, jax.core.Tracer) for _, value in leaves):
            self._compiled += 1  # a trace: no values to read; what the compiled update does is not seen
            return
        read = {name: grad_state(np.asarray(value)) for name, value in leaves if name in self._tensors}
        modes = {path: _mode(m) for path, (m, _) in self._modules.items() if path and _mode(m) is not None}
        shared = set(modes.values())
        training = shared.pop() if len(shared) == 1 else None
        self._updates.append({"grads": read, "model_training": training,
                              "modes": {p: t for p, t in modes.items() if training is not None and t != training}})

    def _count(self):
        return int(np.asarray(self.optimizer.step.get_value()))

    def install(self) -> None:
        if self._class is not None:
            return
        original = type(self.optimizer)
        at_update = self._at_update

        def update(optimizer, *args, **kwargs):
            at_update(optimizer, args, kwargs)
            return original.update(optimizer, *args, **kwargs)

        audited = type(original)(original.__name__, (original,), {
            "update": update, "__module__": original.__module__, "__qualname__": original.__qualname__})
        try:
            self.optimizer.__class__ = audited
        except TypeError as exc:
            raise AuditInputError(f"the audit cannot read this {_full_type(self.optimizer)}'s updates: {exc}") from None
        self._class = original
        self._counted = self._count()

    def uninstall(self) -> None:
        if self._class is None:
            return
        self.optimizer.__class__ = self._class
        self._class = None

    def take_updates(self) -> list[dict]:
        updates, self._updates = self._updates, []
        count, compiled = self._count(), self._compiled
        unseen = count - self._counted - len(updates) - compiled
        self._counted, self._compiled = count, 0
        if compiled or unseen > 0:
            raise AuditInputError(f"the optimizer updated {compiled + max(unseen, 0)} time(s) where the audit cannot "
                                  "read its gradients (in a function compiled by nnx.jit or jax.jit): audit the step "
                                  "run eagerly, calling optimizer.update(model, grads) outside jit")
        return updates
