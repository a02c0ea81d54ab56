"""Graph mode of the paddle room (--mode graph), its two backends:

"to_static" (ToStatic): the loop around `paddle.jit.to_static(layer)`, called as its users call it
    (no full_graph: the translator the installed version picks by default, SOT in Paddle 2.6 and 3.x on
    Python 3.8-3.11), one small Layer per step that runs the step's path and computes its loss, as users
    write a converted train step (`loss = loss_fn(model(x), y)` inside it), then backward and the
    optimizer step in dygraph as the to_static docs show. A mixin of runner.py's PaddleRunner: it uses
    the runner's layers and model.
"static" (StaticRunner): the static-graph program of the Fluid reports: `paddle.enable_static()`, a
    Program of paddle.static.data + the same layers, `optimizer.minimize(loss)`, an Executor; and the
    one observation only such a program gives, which parameters its update ops decay (`decayed`). An
    adapter of its own, which the room's ADAPTERS names for this run; it shares with the dygraph loop
    only common.py (the layers, the optimizer, the loss, the defaults read back, the device).
"""
from __future__ import annotations

import functools
from contextlib import contextmanager

import numpy as np

from ..base import Unavailable, Unsupported, frozen_params
from ...spec import layers as layer_kinds
from ...spec import DROPOUT_PROBE, PADDING_PROBE, param_names
# paddle from common.py, which imports it quietly (its import warns about ccache)
from .common import (ROLES, PaddleBase, criterion, loss_of, make_layers, new_optimizer, paddle, read_defaults,
                     run_path)


class _Step(paddle.nn.Layer):
    """What a user hands to paddle.jit.to_static: one training step's forward, its path's layers in
    order (a Linear after an image flattens it first) and the loss of their output, built once as a
    user's loss object is. The loss is inside the converted function, where Paddle 2.6's cross-entropy
    divides its mean as its static program does, not as its dygraph does (known.yaml)."""

    def __init__(self, layers, detach_after, flatten, reduce, ce):
        super().__init__()
        self.steps = paddle.nn.LayerList(layers)
        self.detach = [i for i, name in enumerate(detach_after) if name]
        self.flatten = [i for i, name in enumerate(flatten) if name]
        self.reduce = reduce
        self.loss_fn = None if ce is None else criterion(ce)

    def forward(self, x, target):
        for i, layer in enumerate(self.steps):
            if i in self.flatten:
                x = paddle.flatten(x, 1)
            x = layer(x)
            if i in self.detach:
                x = x.detach()
        return loss_of(x, target, self.reduce) if self.loss_fn is None else self.loss_fn(x, target)


def _compiled_node(name: str) -> bool:
    """Whether a grad node is the compiled program's: Dy2StGradNode in Paddle 3; Paddle 2.6's
    RunProgramGradNode does not override name() and reads GradNodeBase. A dygraph op's node has its
    own name (MatmulGradNode, AddGradNode, BatchNormGradNode, ...)."""
    return name in ("Dy2StGradNode", "GradNodeBase")


# Every code object SOT generated for an earlier case of this process, kept alive (see _fresh_sot).
_RETIRED_CODES: list = []


def _fresh_sot():
    """Each case is a user program of its own, but the worker runs every case of a run in one process:
    SOT's per-process state is started afresh for each case, as it is for a new program.

    - OpcodeExecutorCache: SOT keys its translations by the code of _Step.forward, shared by every
      case, and guards them by id() of the layers; past MAX_CACHE_SIZE (20) translations of one code it
      silently runs dygraph. Cleared.
    - StepInfoManager: SOT marks the code it generates as holding a graph only during the first
      BACK_TRACE_STEPS (20) calls of a converted function, counted per code of _Step.forward over the
      process; a generated code never marked runs as plain dygraph from its 10th call on (the C++
      CodeStatus). Reset, so a case's first calls mark its codes as a new program's first calls do.
    - CodeStatus (C++; no Python binding clears it) keys that state by the code object's address: a
      code generated for this case at the address of a freed one inherits the freed one's state, and
      one marked "without graph" runs dygraph from its first call (Paddle 2.6.2: a few dozen cases
      of a run, a different few each time, fell back so). The generated codes of earlier cases are
      kept alive, so no address is reused.
    The loss of every call is still checked to come from a compiled program (_compiled_step)."""
    from paddle.jit.sot.opcode_translator.custom_code import CustomCode
    from paddle.jit.sot.opcode_translator.executor.executor_cache import OpcodeExecutorCache
    from paddle.jit.sot.utils import StepInfoManager

    def generated(entry):  # the cache's values: lists (2.6) or (list, guard tree) pairs (3.x) of CustomCode
        if isinstance(entry, CustomCode):
            yield entry.code
        elif isinstance(entry, (list, tuple)):
            for item in entry:
                yield from generated(item)

    cache = OpcodeExecutorCache()
    _RETIRED_CODES.extend(code for code in generated(list(cache.cache.values())) if code is not None)
    cache.clear()
    StepInfoManager().step_record.clear()


class ToStatic:
    """backend "to_static": the dygraph loop with each step (path and loss) compiled by paddle.jit.to_static."""

    def _start_to_static(self):
        self.compiled = {}  # one compiled Layer per step path and reduction, within this case only
        _fresh_sot()

    def _compiled_step(self, path, x, target, reduce=True, ce=None):
        """The step's loss, from to_static of the step (its path and its loss), with the installed
        version's default translator; under DataParallel, the net's forward runs it (a model whose
        converted forward returns its loss, wrapped in DataParallel). SOT runs a graph of fewer than
        MIN_GRAPH_SIZE (10) ops as plain dygraph without a word, and these steps are a few ops: the
        guard lowers it to 0, and STRICT_MODE makes an unsupported frame raise instead of falling back
        (both act on SOT only). Each loss is then checked to come from the compiled program."""
        key = (tuple(path), reduce)  # the case's loss object is the same for every step
        if key not in self.compiled:
            flatten = layer_kinds.flatten_before(self.model, path)
            step = _Step([self.layers[n] for n in path], [n in self.model.detach_after for n in path],
                         [i in flatten for i in range(len(path))], reduce, ce)
            self.compiled[key] = paddle.jit.to_static(step)  # as a user calls it: the default translator
        run = functools.partial(self._run_compiled, self.compiled[key], target=target)
        if self.parallel is not None:
            self.net.run_path = run
            return self.parallel(x)
        return run(x)

    @staticmethod
    def _run_compiled(compiled, x, target):
        from paddle.jit.sot.utils import min_graph_size_guard, strict_mode_guard
        from paddle.jit.sot.utils.exceptions import FallbackError
        try:
            with min_graph_size_guard(0), strict_mode_guard(True):
                loss = compiled(x, target)
        except FallbackError as exc:  # the strict mode's refusal, where a user's SOT would run the frame in dygraph
            said = " ".join(str(exc).split())[:200]
            raise Unsupported(f"to_static cannot compile this path whole (SOT would fall back to dygraph): {said}") \
                from None
        node = loss.grad_fn.name() if loss.grad_fn is not None else None
        if node is not None and not _compiled_node(node):
            raise RuntimeError(f"to_static fell back to dygraph: the loss's grad node is {node}, "
                               f"not the compiled program's Dy2StGradNode")
        return loss


@contextmanager
def _static_mode():
    """Static mode for the block only: the worker goes back to dygraph whatever happens, so one
    process can run eager, to_static and static cases one after another."""
    paddle.enable_static()
    try:
        yield
    finally:
        paddle.disable_static()


UPDATE_OPS = ("sgd", "momentum", "adam", "adamw")


def _decays(label: str) -> bool:
    """Whether an op _update_ops lists applies weight decay: a regularization op (any op but the
    update itself reading the parameter) or an update op with decay fused in (a "(...)" suffix)."""
    op = label.split("(")[0].split(".")[-1].rstrip("_")
    return op not in UPDATE_OPS or "(" in label


def _update_ops(program, names) -> dict[str, set[str]]:
    """Per canonical parameter, the ops minimize() appended after the backward pass that read it:
    the update op (sgd_, momentum_, adam_, adamw_) and any regularization op (scale, ...), with the
    regularization an update op fuses (momentum's regularization_method / coeff). Paddle 3 builds
    PIR programs (op.name(), operands defined by builtin.parameter); 2.6 the legacy ProgramDesc
    (op.type, input variable names)."""
    def describe(op):
        if callable(getattr(op, "name", None)):  # PIR
            attrs = op.attrs()
            reads = [o.source().get_defining_op() for o in op.operands()]
            reads = [d.attrs().get("parameter_name") for d in reads if d is not None and d.name() == "builtin.parameter"]
            return op.name(), attrs, reads
        return op.type, {n: op.attr(n) for n in op.attr_names}, list(op.input_arg_names)

    ops = [describe(op) for op in program.global_block().ops]
    last_grad = max((i for i, (name, _, _) in enumerate(ops) if name.endswith("_grad")), default=len(ops))
    found: dict[str, set[str]] = {}
    for name, attrs, reads in ops[last_grad + 1:]:
        label = name
        if attrs.get("regularization_method") and attrs.get("regularization_coeff"):
            label += f"({attrs['regularization_method']} {attrs['regularization_coeff']:.3g})"
        if attrs.get("with_decay") and attrs.get("coeff"):  # adamw's decoupled decay
            label += f"(decoupled {attrs['coeff']:.3g})"
        for var in reads:
            if var in names:
                found.setdefault(names[var], set()).add(label)
    return found


def _raw_grads(program, grads):
    """The gradients as the backward pass computed them. Paddle 2.6 (ProgramDesc): minimize() adds a coupled
    L2Decay to a dense gradient in place (a `sum` op writing the gradient's own variable), so that variable
    holds gradient + decay after the run; each gradient is copied (an assign op) before the first update-side
    op (role Optimize) that writes it, and the copy is fetched. Paddle 3 (PIR) overwrites no value: as they are."""
    block = program.global_block()
    if not block.ops or callable(getattr(block.ops[0], "name", None)):  # PIR
        return grads
    optimize = int(paddle.base.core.op_proto_and_checker_maker.OpRole.Optimize)
    out = []
    for name, g in grads:
        at = next((i for i, op in enumerate(block.ops)
                   if g.name in op.output_arg_names and int(op.attr("op_role")) & optimize), None)
        if at is not None:
            raw = block.create_var(name=f"{g.name}@BEFORE_UPDATE", shape=g.shape, dtype=g.dtype)
            block._insert_op(at, type="assign", inputs={"X": [g]}, outputs={"Out": [raw]}, attrs={"op_role": optimize})
            g = raw
        out.append((name, g))
    return out


class StaticRunner(PaddleBase):
    """backend "static": Program + Executor.

    Parameters are named after the canonical names (ParamAttr(name=...), BatchNorm's name_mean /
    name_variance), so every program of a case shares them in the case's Scope, as Fluid programs
    share parameters by name. Each program is built under a fresh unique_name.guard(), so its
    optimizer's accumulators (velocity, moments, beta pows, learning rate) get the same names in
    every program: the optimizer state is shared too."""

    def __init__(self, run=None, **axes):
        super().__init__(run, **axes)
        if self.backend != "static":
            raise Unavailable(f"StaticRunner runs the static program (--mode graph --backend static) only, "
                              f"not {self.run.execution}: that is PaddleRunner's (runner.py)")

    def _var(self, name):
        if name in self.bias_names:  # a bias left to default: paddle named it (linear_0.b_0)
            return self.bias_names[name]
        layer, role = name.split(".")
        return f"{layer}.{role}" if role in ("weight", "bias") else f"{layer}{ROLES[role]}"

    def _attrs(self, layer, role):
        name = f"{layer}.{role}"
        kw = {"name": name}
        if name in self.frozen_now:
            kw["trainable"] = False
        coeff = self.optimizer.regularizers.get(name) if hasattr(self, "optimizer") else None
        if coeff is not None:
            kw["regularizer"] = paddle.regularizer.L2Decay(coeff)
        if hasattr(self, "optimizer") and name in self.optimizer.no_clip:
            kw["need_clip"] = False
        return paddle.ParamAttr(**kw)

    def _make_layers(self):
        """The case's layers, built in the program being defined, their parameters named by _attrs."""
        layers, net = make_layers(self.model, self._attrs)
        # the name paddle gave each bias left to default (deterministic under a unique_name.guard)
        self.bias_names = {f"{n}.bias": layers[n].bias.name for n, spec in self.model.layers.items()
                           if spec.bias == "default" and not spec.tie and layers[n].bias is not None}
        return layers, net

    # ------------------------------------------------------------ the model, as the user builds it
    def build(self, model, values):
        paddle.seed(0)
        self.model = model
        if any(layer.init == "default" for layer in model.layers.values()):
            raise Unsupported("a static program's startup draws its parameters when it first runs, after the "
                              "case's first step is built: no value to observe as built")
        self.scope = paddle.static.Scope()
        self.place = paddle.framework._current_expected_place()
        self.programs = {}
        self.definition = None  # (trainable, what the optimizer holds, defaults), read from a Program of the model
        self.fetched = {}  # the gradients the last run fetched
        self.pending_update = False
        self.grads_live = False
        self.ops = {}  # parameter -> update / regularization ops of the programs that ran
        self.values0 = {n: np.asarray(v, dtype=np.float32) for n, v in values.items()}
        self.frozen_now = frozen_params(model)  # ParamAttr(trainable=False) of the next programs built
        self.bias_names = {}  # _make_layers: the names paddle gave the biases left to default

    def make_optimizer(self, optimizer):
        self.optimizer = optimizer  # each program's minimize() makes its own (_program)

    def _defined(self):
        """The model defined once in a Program without a loss: which parameters are trainable, which the
        optimizer holds, and the settings left to default."""
        if self.definition is not None:
            return self.definition
        main, startup = paddle.static.Program(), paddle.static.Program()
        with _static_mode(), paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
            layers, _ = self._make_layers()
            params = {p.name: p for p in main.global_block().all_parameters()}
            settings = read_defaults(self.model, self.optimizer, layers, new_optimizer(self.optimizer, None),
                                     self._rate, self._sides(main, startup, layers))
            names = {self._var(n): n for n in param_names(self.model)}
            trainable = {names[v]: not p.stop_gradient for v, p in params.items()}
            if self.optimizer.params == "default":
                # minimize(loss) without a parameter list takes the program's parameters with
                # stop_gradient False (Optimizer.backward, PIR) / trainable (ProgramDesc, 2.6): the same set
                held = [names[v] for v, p in params.items() if not p.stop_gradient]
            elif self.optimizer.params == "all":
                held = [names[v] for v in params]
            else:
                held = list(self.optimizer.params)
        self.definition = trainable, held, settings
        return self.definition

    def _sides(self, main, startup, layers) -> dict[str, int]:
        """The side of each padding-default conv's output on a PADDING_PROBE image of ones, run in the program
        the model is defined in (its parameters live in that program's block), from its startup's values."""
        convs = {name: spec.conv2d[0] for name, spec in self.model.layers.items() if spec.padding == "default"}
        if not convs:
            return {}
        shape = {name: [1, c_in, PADDING_PROBE, PADDING_PROBE] for name, c_in in convs.items()}
        outputs = [layers[name](paddle.static.data(f"probe_{name}", shape[name], "float32")) for name in convs]
        exe, scope = paddle.static.Executor(self.place), paddle.static.Scope()
        exe.run(startup, scope=scope)
        feed = {f"probe_{name}": np.ones(shape[name], np.float32) for name in convs}
        got = exe.run(main, feed=feed, fetch_list=outputs, scope=scope)
        return {name: np.asarray(y).shape[-1] for name, y in zip(convs, got)}

    def _rate(self, layer) -> float:
        """The fraction of DROPOUT_PROBE ones the dropout layer zeroes in a train-mode program of its own."""
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            layer.train()
            y = layer(paddle.ones([DROPOUT_PROBE]))
        out = paddle.static.Executor(self.place).run(main, fetch_list=[y], scope=paddle.static.Scope())
        return float((np.asarray(out[0]) == 0).mean())

    def optimizer_params(self):
        return list(self._defined()[1])

    # ------------------------------------------------------------ settings, freezing, learning rate
    def defaults(self):
        return self._defined()[2]

    def set_trainable(self, names, trainable):
        """Freezing between steps: a Program's trainable flags are fixed when minimize() builds its
        backward, so the next steps run programs built with the new ParamAttr(trainable=...); they
        share the parameters and the optimizer state by name, as every program of the case does."""
        params = param_names(self.model)
        for name in names:
            chosen = {p for p in params if p == name or p.startswith(name + ".")}
            self.frozen_now = self.frozen_now - chosen if trainable else self.frozen_now | chosen

    def set_lr(self, lr):
        raise Unsupported("Optimizer.set_lr is dygraph-only: a Program built by minimize() holds its learning rate")

    # ------------------------------------------------------------ one step
    def _program(self, path, train, backward, shape, reduce=True, ce=None):
        key = (tuple(path), train, backward, frozenset(self.frozen_now), reduce)
        if key in self.programs:
            return self.programs[key]
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
            layers, net = self._make_layers()
            net.train() if train else net.eval()  # a layer's mode is fixed when the program is built
            # an embedding path's input is int64 row indices; the batch dimension is left open (None), as
            # Fluid users declare it, so that one program takes every batch size of the schedule
            x = paddle.static.data("x", [None, *shape[0][1:]], "int64" if self.model.spec(path[0]).embedding else "float32")
            # the target: int64 class labels under a cross-entropy
            t = paddle.static.data("t", [None, *shape[1][1:]], "float32" if ce is None else "int64")
            # a cross-entropy's loss object is built in the program, as a Fluid user writes it
            loss = loss_of(run_path(self.model, layers, path, x), t, reduce, ce)
            params_grads = []
            if backward:
                params = {p.name: p for p in main.global_block().all_parameters()}
                if self.optimizer.params == "default":
                    chosen = None
                elif self.optimizer.params == "all":
                    chosen = list(params.values())
                else:
                    chosen = [params[self._var(n)] for n in self.optimizer.params if self._var(n) in params]
                no_decay = {self._var(n) for n in self.optimizer.no_decay}
                below = self.optimizer.no_decay_ndim_below
                if below is not None:  # the users' `p.ndim < 2`, over the program's parameters
                    no_decay |= {name for name, p in params.items() if len(p.shape) < below}
                if (no_decay or self.optimizer.no_decay_names) and self.optimizer.name != "adamw":
                    raise Unsupported("minimize() in a static Program takes no parameter groups (its backward "
                                      "rejects a list of dicts): no per-group weight_decay")
                opt = new_optimizer(self.optimizer, chosen, no_decay)
                _, params_grads = opt.minimize(loss)
        names = {self._var(n): n for n in param_names(self.model)}
        grads = _raw_grads(main, [(names[p.name], g) for p, g in params_grads])
        program = (main, loss, grads, _update_ops(main, names))
        # initialise what this program adds (optimizer accumulators) without resetting what an
        # earlier program of the case already holds: run its startup in a scratch scope, copy the new
        scratch = paddle.static.Scope()
        paddle.static.Executor(self.place).run(startup, scope=scratch)
        created = (scratch.local_var_names() if hasattr(scratch, "local_var_names")  # PIR (Paddle 3)
                   else [v.name for v in startup.list_vars() if v.persistable])  # ProgramDesc (2.6)
        for var in created:
            if self.scope.find_var(var) is None:
                # a parameter starts from the case's initial value, the rest from its initializer
                value = self.values0[names[var]] if var in names else np.array(scratch.find_var(var).get_tensor())
                self.scope.var(var).get_tensor().set(value, self.place)
        self.programs[key] = program
        return program

    # A step with backward runs the program minimize() built: forward, backward and update in one
    # Executor.run, gradients fetched before the update ops. The engine then asks for the update,
    # which has happened; a backward step the engine does not update is refused when it reads on.
    def forward(self, path, x, target, train, backward, reduce=True, loss=None, touch=()):
        if touch:
            raise Unsupported("the static program's loss is built once per path: this adapter adds no "
                              "parameters times zero to it")
        if self.pending_update:
            raise Unsupported("a static program runs minimize()'s update with its backward: no backward without update")
        if backward and self.grads_live:
            raise Unsupported("a static program recomputes gradients each run: they cannot accumulate")
        with _static_mode():
            main, loss, grads, ops = self._program(path, train, backward, (x.shape, target.shape), reduce, loss)
            out = paddle.static.Executor(self.place).run(
                main, feed={"x": x, "t": target}, fetch_list=[loss] + [g for _, g in grads], scope=self.scope)
        self.fetched = {n: np.asarray(g).astype(np.float64) for (n, _), g in zip(grads, out[1:])}
        if backward:
            self.pending_update = True
            self.grads_live = True
            for name, names in ops.items():
                self.ops.setdefault(name, set()).update(names)
        return float(np.asarray(out[0]).mean())

    def update(self):
        if not self.pending_update:
            raise Unsupported("a static program updates only in the run of minimize(): no update without backward")
        self.pending_update = False

    def clear_grads(self, mode):
        if mode != "default":
            raise Unsupported("a static program has no clear_grad: each run computes its gradients afresh")
        self.grads_live = False  # nothing to call: the next run's gradients are new

    # ------------------------------------------------------------ reading back
    def grads(self):
        return {n: self.fetched.get(n) for n in param_names(self.model)}

    def values(self):
        if self.pending_update:
            raise Unsupported("a static program runs minimize()'s update with its backward: no backward without update")
        out = {}
        for name in param_names(self.model):
            var = self.scope.find_var(self._var(name))
            out[name] = (self.values0[name] if var is None else np.array(var.get_tensor())).astype(np.float64)
        return out

    def trainable(self):
        return dict(self._defined()[0])

    def decayed(self):
        """The static program is the one run with an update program to read: the ops minimize()
        appended for each parameter (see _update_ops)."""
        return {n: any(_decays(op) for op in self.ops.get(n, ())) for n in param_names(self.model)}
