"""The mindspore probe of `python -m conformance audit`: a user's nn.Cell, nn.Optimizer and step, in
PyNative mode only. GRAPH_MODE steps are not audited yet: the probe refuses a model handed over while
the context is GRAPH_MODE, and a step whose update ran compiled (under @ms.jit, or after switching to
GRAPH_MODE) stops the audit with one line saying so, instead of reporting an optimizer that never
updated. (The modes it reads at the update are not what a compiled graph ran with, see
compiled-grad-keeps-first-mode, and the findings are explained from the profile's eager variants.)

Gradients are read where the update reads them. A MindSpore step hands them to the optimizer as its
one argument, `optimizer(grads)`: a tuple with one tensor per `optimizer.parameters`, whether the
user's loop calls it after `ms.value_and_grad(..., optimizer.parameters)` or nn.TrainOneStepCell's
construct does (it runs as Python in PyNative, so its `self.optimizer(grads)` is the same call).
install() gives the optimizer instance a class of its own for the audit: a subclass of its class, with
the same name, module and everything else, whose `__call__` first reads grads[i] for each
optimizer.parameters[i] (a tensor: grad_state of its values; None: "none"), the model's `training`
flag and every Cell's that differs from it, then calls the class's own `__call__` with the same
arguments and returns what it returns. It changes no tensor, no flag and no argument; isinstance()
answers as before. uninstall() puts the instance's class back: the optimizer is exactly as handed over.

Two other ways do not work. The optimizer's `construct` wrapped on the instance: nn.SGD, nn.Momentum,
nn.Adam ... decorate construct with @jit, which compiles the Cell object and cannot resolve a Python
wrapper in its place ("Parse Resolve convert failed"). A forward pre-hook
(Cell.register_forward_pre_hook): a PyNative call runs it, but a step under @ms.jit compiles the
hooks of the Cells it calls into its graph, so the audit would change (or break) what such a step does.

A compiled update runs no Python: the subclass's __call__ is not reached from inside @ms.jit or a
GRAPH_MODE graph (nor by a step calling construct directly). The optimizer counts its updates in
`global_step` (its construct adds one each call): when that count grows by more than the updates
read, or an update is called while the context is GRAPH_MODE, take_updates() raises AuditInputError
saying so, after the step has run as it would.

What the model holds: the Parameters in each registered Cell's `_params` (cells_and_names(), the
Cells MindSpore registers: attributes, nn.SequentialCell / CellList / CellDict), named by their
Parameter.name (the name the optimizer, its decay rule and checkpoints use; a path where two share
one); BatchNorm's moving_mean / moving_variance (mint's running_mean / running_var /
num_batches_tracked) are Parameters with requires_grad=False, marked statistic; and what the plain
Python containers of every Cell's attributes hold (walk.plain_contents), leaving out the registries
and bookkeeping every nn.Cell keeps in its __dict__ (_cells, _params, _params_list, _buffers,
_primitives, hooks: read from a bare nn.Cell). Such Cells and Parameters are unregistered and named
by their attribute path. An optimizer the model holds (a TrainOneStepCell handed over as the model)
is left out, with its state (moments, global_step, learning_rate are Parameters too).

Weight decay: nn.Optimizer decides it per parameter at construction, in `decay_flags`. Without
parameter groups the flag is MindSpore's name rule ('beta' and 'gamma' not in Parameter.name) and the
decay runs when weight_decay > 0; with groups it is the group's weight_decay > 0. That rule is
reported as a decay setting when the model has normalization layers whose affine parameters the
optimizer holds (what the rule is there for): it is ineffective when it exempts none of them (mint's
norms name theirs weight and bias). A group with weight_decay 0 beside decayed ones is the other
setting, as torch's. `decayed` is None for an optimizer outside the ones known to apply decay_flags.
"""
from __future__ import annotations

import functools

import numpy as np

import mindspore as ms
from mindspore import nn

from ...auditor.observe import AuditInputError, DecaySetting, Inventory, Layer, Param, Probe, grad_state
from ...auditor.walk import plain_contents

# running statistics of BatchNorm (nn: moving_*; mint.nn: running_*, and the batch counter)
STATISTICS = ("moving_mean", "moving_variance", "running_mean", "running_var", "num_batches_tracked")
# MindSpore's optimizers whose construct applies weight decay by `decay_flags` (nn.Optimizer.decay_weight,
# or the flags passed to their update op)
DECAYING = ("SGD", "Momentum", "Adam", "AdamWeightDecay", "LazyAdam", "AdaMax", "Adagrad", "Adadelta",
            "RMSProp", "Rprop", "ASGD", "FTRL", "ProximalAdagrad", "Lamb")


def _type(obj) -> str:
    return type(obj).__name__


def _full_type(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


@functools.lru_cache(maxsize=None)
def _internals() -> frozenset:
    """The attributes every nn.Cell keeps in its __dict__ (registries, hooks, compile state), read from
    a bare Cell once per process."""
    return frozenset(vars(nn.Cell())) | {"_cells", "_params", "_params_list", "_buffers", "_primitives"}


def _is_norm(cell) -> bool:
    """A normalization layer (BatchNorm, LayerNorm, GroupNorm, InstanceNorm, RMSNorm; nn's or mint's or a
    subclass): what MindSpore's beta/gamma decay rule is written for."""
    return any("Norm" in klass.__name__ for klass in type(cell).__mro__ if klass is not object)


def _param(p):
    """The Parameter a Cell holds (a lazily initialised one's initialised value, as parameters_and_names)."""
    inited = getattr(p, "inited_param", None)
    return inited if inited is not None else p


def _numpy(tensor) -> np.ndarray:
    try:
        return tensor.asnumpy()
    except TypeError:  # a dtype numpy lacks (bfloat16)
        return tensor.astype(ms.float32).asnumpy()


def _grad_state(grad) -> tuple:
    if grad is None:
        return "none", None
    values = getattr(grad, "values", None)  # a RowTensor / COOTensor gradient: its values
    if not hasattr(grad, "asnumpy") and values is not None:
        grad = values
    array = _numpy(grad)
    if array.dtype == np.float16:  # mixed precision: its norm would overflow float16 (grad_state keeps the dtype)
        array = array.astype(np.float32)
    return grad_state(array)


class MindSporeProbe(Probe):
    framework = "mindspore"

    def __init__(self, model, optimizer):
        if not isinstance(model, nn.Cell) or isinstance(model, nn.Optimizer):
            raise AuditInputError(f"model is a {_full_type(model)}, not a mindspore.nn.Cell")
        if not isinstance(optimizer, nn.Optimizer):
            raise AuditInputError(f"optimizer is a {_full_type(optimizer)}, not a mindspore.nn.Optimizer")
        if ms.get_context("mode") == ms.GRAPH_MODE:
            raise AuditInputError("mindspore is in GRAPH_MODE: the audit reads PyNative steps only "
                                  "(ms.set_context(mode=ms.PYNATIVE_MODE))")
        super().__init__(model, optimizer)
        self._class = None            # the optimizer's own class while the audit's stands in
        self._updates: list[dict] = []
        self._counted = None          # optimizer.global_step when the updates were last taken
        self._graph_calls = 0
        self._internals = _internals()
        self._held = {id(p): i for i, p in enumerate(optimizer.parameters)}
        self._cells = self._find_cells()                 # path -> (cell, registered)
        self._tensors = self._find_tensors()             # name -> (parameter, Param)
        self._names = {id(t): name for name, (t, _) in self._tensors.items()}

    # ---------------------------------------------------------------- what the model holds
    def _attributes(self, cell) -> dict:
        return {k: v for k, v in vars(cell).items() if k not in self._internals}

    def _find_cells(self) -> dict:
        cells, optimizers = {}, []
        for path, cell in self.model.cells_and_names():
            if isinstance(cell, nn.Optimizer):
                optimizers.append(path)
            elif not any(path.startswith(o + ".") for o in optimizers):
                cells[path] = (cell, True)
        known = {id(c) for c, _ in cells.values()}
        queue = list(cells.items())
        while queue:
            path, (cell, _) = queue.pop(0)
            for where, found in plain_contents(self._attributes(cell), (nn.Cell, ms.Parameter)):
                if not isinstance(found, nn.Cell) or isinstance(found, nn.Optimizer) or id(found) in known:
                    continue
                base = f"{path}.{where}" if path else where
                for sub, c in found.cells_and_names():
                    if id(c) not in known and not isinstance(c, nn.Optimizer):
                        known.add(id(c))
                        entry = (f"{base}.{sub}" if sub else base, (c, False))
                        cells[entry[0]] = entry[1]
                        queue.append(entry)
        return cells

    def _find_tensors(self) -> dict:
        tensors, seen, decayed = {}, set(), self._decay_flags()

        def add(name, p, layer, cell, statistic, registered, path_name):
            if id(p) in seen:
                return
            seen.add(id(p))
            if name in tensors or not name:
                name = path_name  # two Parameters sharing a name: the second is named by its path
            index = self._held.get(id(p))
            tensors[name] = (p, Param(
                name=name, layer=layer, layer_type=_type(cell), size=int(np.prod(p.shape)),
                trainable=bool(p.requires_grad) and not statistic, statistic=statistic,
                registered=registered, in_optimizer=index is not None,
                decayed=None if index is None or decayed is None else decayed[index]))

        for path, (cell, registered) in self._cells.items():  # registered ones come first
            norm = _is_norm(cell)
            for local, p in list(cell._params.items()):
                if p is None:
                    continue
                p = _param(p)
                path_name = f"{path}.{local}" if path else local
                add(p.name if registered else path_name, p, path, cell, norm and local in STATISTICS, registered,
                    path_name)
            for where, found in plain_contents(self._attributes(cell), (nn.Cell, ms.Parameter)):
                if isinstance(found, ms.Parameter):
                    path_name = f"{path}.{where}" if path else where
                    add(path_name, found, path, cell, False, False, path_name)
        return tensors

    # ---------------------------------------------------------------- weight decay
    def _decay_flags(self):
        """Whether the optimizer's weight decay applies to each of its parameters, by index; None when
        this probe does not know how the optimizer applies it."""
        opt = self.optimizer
        known = tuple(c for c in (getattr(nn, n, None) for n in DECAYING) if isinstance(c, type))
        flags = getattr(opt, "decay_flags", None)
        if not isinstance(opt, known) or flags is None or len(flags) != len(opt.parameters):
            return None
        if getattr(opt, "is_group", False):
            return [bool(f) for f in flags]  # the group's weight_decay > 0
        runs = bool(getattr(opt, "exec_weight_decay", False))
        return [runs and bool(f) for f in flags]

    def _decay_settings(self) -> list[DecaySetting]:
        opt, flags = self.optimizer, self._decay_flags()
        if flags is None:
            return []
        held = [self._names.get(id(p), p.name) for p in opt.parameters]
        if getattr(opt, "is_group", False):
            if any(flags) and not all(flags):
                return [DecaySetting(setting="parameter groups: weight_decay 0 for some", names=[],
                                     excludes=[n for n, f in zip(held, flags) if not f])]
            return []
        if not getattr(opt, "exec_weight_decay", False):
            return []
        norm_layers = {path for path, (cell, _) in self._cells.items() if _is_norm(cell)}
        if not any(param.in_optimizer and param.trainable and param.layer in norm_layers
                   for _, param in self._tensors.values()):
            return []  # no normalization layer trained here: the rule has nothing to do
        decay = opt.weight_decay  # a Tensor of the value, or a Cell computing it per step
        value = f"{float(_numpy(decay).reshape(-1)[0]):g}" if isinstance(decay, ms.Tensor) else _type(decay)
        excludes = [name for name, flag in zip(held, flags) if not flag]  # what the name rule exempts
        return [DecaySetting(setting=f"{_type(opt)}(weight_decay={value}) without parameter groups: no decay "
                                     "for names containing 'beta' or 'gamma'",
                             names=["beta", "gamma"], excludes=excludes)]

    def inventory(self) -> Inventory:
        return Inventory(
            framework="mindspore", version=str(ms.__version__), model_type=_type(self.model),
            params=[param for _, param in self._tensors.values()],
            layers=[Layer(path=path, type=_type(c), registered=registered)
                    for path, (c, registered) in self._cells.items() if path],
            decay_settings=self._decay_settings(), has_modes=True)

    # ---------------------------------------------------------------- reading
    def values(self):
        for name, (p, _) in self._tensors.items():
            yield name, _numpy(p).copy()

    def _at_update(self, received):
        if ms.get_context("mode") == ms.GRAPH_MODE:
            self._graph_calls += 1  # what a compiled optimizer does with them is not read here
            return
        grads = {}
        for p, grad in zip(self.optimizer.parameters, received):
            name = self._names.get(id(p))
            if name is not None:
                grads[name] = _grad_state(grad)
        training = bool(self.model.training)
        modes = {path: bool(c.training) for path, (c, _) in self._cells.items()
                 if path and bool(c.training) != training}
        self._updates.append({"grads": grads, "model_training": training, "modes": modes})

    def _count(self):
        step = getattr(self.optimizer, "global_step", None)
        return int(_numpy(step).reshape(-1)[0]) if isinstance(step, ms.Parameter) else None

    def install(self) -> None:
        if self._class is not None:
            return
        original = type(self.optimizer)
        at_update = self._at_update

        def __call__(optimizer, *args, **kwargs):
            at_update(args[0] if args else kwargs.get("gradients", ()))
            return original.__call__(optimizer, *args, **kwargs)

        audited = type(original.__name__, (original,), {"__call__": __call__, "__module__": original.__module__,
                                                        "__qualname__": original.__qualname__})
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
        count, graph_calls = self._count(), self._graph_calls
        unseen = count - self._counted - len(updates) - graph_calls \
            if count is not None and self._counted is not None else 0
        self._counted, self._graph_calls = count, 0
        if graph_calls or unseen > 0:
            raise AuditInputError(f"the optimizer updated {graph_calls + max(unseen, 0)} time(s) where the audit "
                                  "cannot read its gradients (in a graph compiled by @ms.jit or GRAPH_MODE, or "
                                  "its construct called directly): audit the step run in PyNative mode, "
                                  "calling optimizer(grads), without @ms.jit")
        return updates
