"""MindSpore adapter: the code a MindSpore user writes.

    net = Net()                                    # an nn.Cell holding nn.Dense / nn.BatchNorm1d
    optimizer = nn.Momentum(net.trainable_params(), learning_rate, momentum)
    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)
    net.set_train(); loss, grads = grad_fn(x, t); optimizer(grads)

A step's layer path varies, so the model Cell of a step is a `StepNet` made once per path: its
construct runs that path's layers (stop_gradient after the detached ones), it registers the user's
`net` and nothing else, so its set_train() reaches exactly what net.set_train() reaches.

Gradients are functional: each `grad_fn` call returns a fresh tuple, one tensor per optimizer
parameter, and nothing is stored on the parameters. So "default" clearing is no call at all (the
next step simply uses the tuple it gets), and a step without clearing accumulates the way the
MindSpore docs do it (the tutorial's `Accumulator`: add each returned tuple into a buffer, reset
the buffer to zeros after the update); "zeros" is that reset. There is no None gradient to clear to:
`optimizer(grads)` needs a tensor for every parameter, so the `none` variant is Unsupported.
What `grads()` reports is that tuple, as the framework returned it; a parameter outside the
optimizer's collection gets no gradient from this code and is reported as None.

Conventions translated (not judged): nn.Dense keeps its weight as (out, in), exchanged as
(in, out); nn.BatchNorm1d's momentum is the weight of the OLD statistic, so a neutral momentum m
becomes 1 - m; gamma/beta/moving_mean/moving_variance are weight/bias/running_mean/running_var.
Weight decay is each optimizer's own `weight_decay` (a plain parameter list, MindSpore's default,
unless per-parameter coefficients ask for parameter groups); adam is nn.Adam, adamw is
nn.AdamWeightDecay (MindSpore's mapping of torch.optim.AdamW). Clipping is ops.clip_by_global_norm on
the gradient tuple before optimizer(grads).

Beyond the core loop. A "default" setting is left out of the constructor and `defaults()` reads what the
built object holds (optimizer.learning_rate / weight_decay / eps / beta1, beta2; BatchNorm1d.momentum,
which is 1 - the constructor's momentum, i.e. already the new batch's weight; BatchNorm1d.eps,
LayerNorm.epsilon); nn.Momentum has no default learning_rate or momentum (required): Unsupported.
LayerNorm is nn.LayerNorm((width,), epsilon=eps), gamma/beta exchanged as weight/bias. Freezing sets
Parameter.requires_grad: MindSpore has no layer-level switch (a Cell has no requires_grad), so a layer
name sets it on the layer's weight and bias (statistics are never trainable), at build and between
steps alike. A learning-rate change is ops.assign on the optimizer's learning_rate Parameter, as
MindSpore's LearningRateScheduler callback does (Parameter.set_data is not seen by a PyNative step).
no_decay is a group {'params': ..., 'weight_decay': 0.0} (with the per-parameter groups), and so are the
parameters whose Parameter.name a no_decay_names filter matches. clip_norm is
ops.clip_by_norm on each gradient tensor alone (on a tuple it would clip by the joint norm); no_clip
leaves those gradients out of either clipping and out of the global norm.

Layers. conv2d is nn.Conv2d(in, out, k, pad_mode="pad", padding=k // 2, has_bias=...): its
default pad_mode is 'same', so it is passed, and has_bias is passed unless the case leaves the bias to
the default (`bias: default`: has_bias left out of nn.Dense and nn.Conv2d alike; nn.Conv2d then has
none, a layer without a bias reads as a zero bias with a None gradient, never loaded nor in the
optimizer, and defaults() reports whether the built Cell holds one); its weight is OIHW, the canonical
layout, exchanged as is. A batchnorm that takes images is nn.BatchNorm2d (it refuses 2-D input, and
BatchNorm1d 4-D), as spec/layers.py image_batchnorms says (the spec refuses a path that feeds it the
other rank). nn.Dense after an image gets it flattened channels-first (ops.flatten in the step's
construct, where a user's nn.Flatten() sits). embedding is nn.Embedding(rows, dim), with padding_idx
only when the case sets one; its table (`embedding_table`) is the canonical weight, looked up with
the batch's int64 indices; its gradient comes back dense, as value_and_grad returns it. dropout is
nn.Dropout(p=rate) (keep_prob is the old argument), switched by the same set_train as BatchNorm: one
in a plain list is not reached by it and stays in its initial eval state. A rate written positionally
is nn.Dropout(rate), as code ported from torch writes it (the first parameter is keep_prob); defaults()
measures `<layer>.rate` by calling the Cell in train mode on DROPOUT_PROBE ones.

A case's cross_entropy is the user's loss_fn = nn.CrossEntropyLoss(...), made once per case, with the
settings the case writes out (reduction, ignore_index, label_smoothing; "default" ones left out; it has
no from_logits: it always takes logits), called on the model's output and the labels as int32 (its
examples' dtype) in forward_fn, and handed to nn.WithLossCell in the trainer in place of nn.MSELoss().

--mode graph (backend label GRAPH_MODE) runs the same code under ms.set_context(mode=ms.GRAPH_MODE),
as the seed-3 report does. There value_and_grad returns a @jit function: forward and backward are
one graph, compiled at its first call and reused after (one per step path, as grad_fn is made once
per path). The update is a @ms.jit function (clipping, then optimizer(grads)). The tutorials fuse the
two into one `@ms.jit train_step`; the split hands the engine the gradient tuple between them, the
same tuple the compiled value_and_grad hands a fused step, and the optimizer graph runs on it
unchanged (a test checks the split against a fused train_step, bit for bit). An eval forward calls
the model Cell, as the tutorials' test loop does (a Cell compiles once per train/predict phase).
What MindSpore refuses to compile is the case's error with MindSpore's message: the adapter wrote
the user's code, and the refusal is what that user meets (not an Unsupported of the adapter).

--api trainer is MindSpore's own trainer, the network Model.train builds and runs:
nn.TrainOneStepCell(nn.WithLossCell(model, nn.MSELoss()), optimizer), one per step path, called
once per step after set_train(train) (Model.train calls set_train() on it). Model.train itself adds
only a dataset pipeline per one-batch step (a test checks the two agree). TrainOneStepCell does not
clip, so clipped cases are Unsupported there. In graph mode the TrainOneStepCell is compiled, as
Model.train compiles it under GRAPH_MODE.
--replicas 2 is data-parallel: each rank is a worker msrun starts, under set_auto_parallel_context(
parallel_mode=DATA_PARALLEL) with gradients_mean left to its default. The loop hands its gradient tuple to
nn.DistributedGradReducer before the update, as the tutorial's custom loop does, in PyNative and GRAPH_MODE
alike; the trainer's nn.TrainOneStepCell inserts that reducer itself under the parallel context. A step that
does not synchronise keeps its gradient tuple on the rank, and the next backward reduces the sum of both;
a step's `touch` adds 0 * p.sum() of those layers' parameters to forward_fn's loss.
graph.py and trainer.py hold the code only those runs need; runner.py calls it from there.
"""
from __future__ import annotations

import os

import numpy as np

import mindspore as ms
from mindspore import nn, ops

from . import OFFERS
from ..base import RankGroup, Runner, Unavailable, Unsupported, build_layers, free_port, given_loss, hold, loaded
from ...spec import DROPOUT_PROBE, PADDING_PROBE, CrossEntropy, padding_from, Model, Optimizer, defaults_of, param_names
from ...spec import layers as layer_kinds
from .graph import compiled_update, keep_ir_out_of_cwd
from .trainer import one_step_cell

TARGETS = {"cpu": "CPU", "cuda": "GPU", "ascend": "Ascend"}
ROLES = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean", "running_var": "moving_variance"}


class Net(nn.Cell):
    """The user's network: its layers are attributes (or sit in a container attribute)."""


class StepNet(nn.Cell):
    """The model Cell of one step path: the forward a user's construct runs for it. It registers
    `net` only (auto_prefix=False, as MindSpore's wrapper Cells do, so no parameter is renamed); the
    path's layers sit in a plain tuple, which registers nothing."""

    def __init__(self, net, layers, detach, flatten):
        super().__init__(auto_prefix=False)
        self.net = net
        self.path = tuple(zip(layers, detach, flatten))

    def construct(self, x):
        for layer, stop, flat in self.path:
            if flat:  # an image into nn.Dense: flattened channels-first, as a user's nn.Flatten() does
                x = ops.flatten(x)
            x = layer(x)
            if stop:
                x = ops.stop_gradient(x)
        return x


def first_line(fn, *args):
    """fn(*args); an exception keeps its type with the first line of its message only: MindSpore puts
    its message there, then a C++ stack and a trace of the compiled code (the last line, which the
    engine would show, only points to a file of IR)."""
    try:
        return fn(*args)
    except (RuntimeError, TypeError, ValueError) as exc:
        lines = str(exc).strip().splitlines()
        if len(lines) <= 1:
            raise
        raise type(exc)(lines[0]) from exc


def _scalar(value) -> float:
    """A setting as the built object holds it (a float, a Tensor or Parameter of one value) as a float."""
    array = np.asarray(value.asnumpy() if hasattr(value, "asnumpy") else value, dtype=np.float64).reshape(-1)
    if array.size != 1 and not np.all(array == array[0]):
        raise Unsupported(f"the built object holds several values for one setting: {array.tolist()}")
    return float(array[0])


def msrun(world: int, script: str, nodes: int = 1, node: int = 0, master: str = "") -> list[str]:
    """msrun on this host (its scheduler on a localhost port found free now); each worker's log goes to ./log,
    in the rank group's temporary folder. --join keeps msrun up for as long as the workers run. On several
    nodes: this node's --node_rank and its share of the workers, the scheduler at `master` (node 0's)."""
    host, port = master.rsplit(":", 1) if master else ("127.0.0.1", str(free_port()))
    return ["msrun", f"--worker_num={world}", f"--local_worker_num={world // nodes}", f"--node_rank={node}",
            f"--master_addr={host}", f"--master_port={port}", "--log_dir=log", "--join=True", script]


def msrun_scheduler() -> bool:
    """msrun starts the script as its scheduler too, which is no rank: its init() serves the cluster."""
    return os.environ.get("MS_ROLE") == "MS_SCHED"


class MindSporeRunner(Runner):
    framework = "mindspore"
    offers = OFFERS
    features = frozenset({"defaults", "layernorm", "freeze-steps", "lr-schedule", "no-decay", "no-decay-names", "no-decay-ndim",
                          "init-default", "per-sample-loss", "clip-norm", "no-clip", "embedding", "conv2d",
                          "dropout", "cross-entropy", "positional-args", "data-parallel", "touch",
                          "no-sync", "sync-batchnorm"})
    parallelism = RankGroup(launch=msrun, not_a_rank=msrun_scheduler)  # ParallelMode.DATA_PARALLEL

    def __init__(self, run=None, **axes):
        super().__init__(run, **axes)
        target = TARGETS[self.device]
        if not ms.hal.is_available(target):
            raise Unavailable(f"--device {self.device}: mindspore {ms.__version__} has no {target} backend here "
                              f"(mindspore.hal.is_available({target!r}) is False)")
        self.graph = self.mode == "graph"
        if self.graph:
            keep_ir_out_of_cwd()
        ms.set_context(mode=ms.GRAPH_MODE if self.graph else ms.PYNATIVE_MODE)
        ms.set_device(target)
        if self.run.replicas != "1":  # one rank: msrun's environment says where the cluster meets
            from mindspore.communication import get_rank, init
            init()
            ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL)  # gradients_mean left out
            self.rank = get_rank()

    @staticmethod
    def version() -> str:
        return str(ms.__version__)

    # ------------------------------------------------------------ model
    def build(self, model: Model, values):
        ms.set_seed(0)  # each case draws the same dropout masks and initial weights in every run, as in the other rooms
        self.model = model
        images = layer_kinds.image_batchnorms(model)

        def make(name, spec):
            # a bias left to "default" leaves has_bias out: nn.Dense has one, nn.Conv2d none
            bias = {} if spec.bias == "default" else {"has_bias": spec.bias}
            if spec.linear:
                return nn.Dense(*spec.linear, **bias)
            if spec.conv2d:  # padding "same": pad_mode="pad" with k // 2, as a port writes torch's padding=k // 2
                c_in, c_out, k = spec.conv2d
                padding = {} if spec.padding == "default" else {"pad_mode": "pad", "padding": k // 2}
                return nn.Conv2d(c_in, c_out, k, stride=1, **padding, **bias)
            if spec.embedding:  # padding_idx only when the case sets one, as a user who needs one
                padding = {} if spec.padding_idx is None else {"padding_idx": spec.padding_idx}
                return nn.Embedding(*spec.embedding, **padding)
            if spec.dropout:  # positional: nn.Dropout(0.1), as code ported from torch writes it
                return nn.Dropout(spec.dropout) if spec.positional else nn.Dropout(p=spec.dropout)
            # a "default" setting is left out of the constructor, as a user who does not set it
            if spec.layernorm:
                eps = {} if spec.eps == "default" else {"epsilon": spec.eps}
                return nn.LayerNorm((spec.layernorm,), **eps)
            kw = {} if spec.eps == "default" else {"eps": spec.eps}
            if spec.momentum != "default":
                kw["momentum"] = 1.0 - spec.momentum
            if spec.synchronized:  # statistics over every replica's rows, images or vectors
                return nn.SyncBatchNorm(spec.batchnorm, **kw)
            return (nn.BatchNorm2d if name in images else nn.BatchNorm1d)(spec.batchnorm, **kw)

        self.layers = layers = build_layers(model, make)  # a tie is the same Cell object
        attributes, container = hold(model, layers, nn.CellList, nn.CellDict)
        net = Net()
        for name, layer in attributes.items():
            setattr(net, name, layer)  # Cell.__setattr__ registers it and prefixes its parameter names
        if container is not None:
            net.blocks = container
        self.net = net
        self.params = {}
        for name in param_names(model):
            layer, role = name.split(".")
            cell = layers[layer]
            spec = model.layers[layer]
            attr = role if spec.linear or spec.conv2d else "embedding_table" if spec.embedding else ROLES[role]
            self.params[name] = getattr(cell, attr)  # None: a layer built without a bias (has_bias left out)
        for name, value in loaded(model, values).items():
            if self.params[name] is not None:
                self.params[name].set_data(ms.Tensor(self._to_ms(name, value)))
        self.names = {id(p): n for n, p in self.params.items() if p is not None}
        self.criterion = None  # the cross-entropy loss Cell, made once per case (its first step)
        self.models = {}
        self.acc = None  # the gradient tuple the next optimizer(grads) gets
        self._set_requires_grad(model.frozen, False)

    def _set_requires_grad(self, names, trainable):
        """MindSpore has no layer-level switch (a Cell has no requires_grad; its docs freeze Parameters
        one by one): a layer name sets requires_grad on the layer's weight and bias (gamma and beta;
        BatchNorm statistics are never trainable), a `layer.param` name on that Parameter."""
        for name in names:
            if name in self.model.layers:
                targets = [f"{name}.{role}" for role in ("weight", "bias") if self.params.get(f"{name}.{role}") is not None]
            else:
                targets = [name]
            for target in targets:
                if self.params[target] is None:
                    raise Unsupported(f"{target}: the layer was built without a bias (has_bias left out)")
                self.params[target].requires_grad = trainable

    def set_trainable(self, names, trainable):
        self._set_requires_grad(names, trainable)

    def _is_linear_weight(self, name):
        layer, role = name.split(".")
        return role == "weight" and self.model.layers[layer].linear is not None

    def _to_ms(self, name, array):
        return np.ascontiguousarray(array.T) if self._is_linear_weight(name) else array

    # ------------------------------------------------------------ optimizer
    def make_optimizer(self, optimizer: Optimizer):
        if optimizer.params == "default":
            params = self.net.trainable_params()
        elif optimizer.params == "all":
            params = self.net.get_parameters()  # BatchNorm moving statistics included
        else:
            absent = [n for n in optimizer.params if self.params[n] is None]
            if absent:
                raise Unsupported(f"{absent[0]}: the layer was built without a bias (has_bias left out)")
            params = [self.params[n] for n in optimizer.params]
        params = list(params)
        self.opt_spec = optimizer
        below = optimizer.no_decay_ndim_below
        # MindSpore's parameter groups
        if optimizer.regularizers or optimizer.no_decay or optimizer.no_decay_names or below is not None:
            # no_decay: a group with weight_decay 0.0; per-parameter coefficients: a group each; the
            # rest: a group without its own weight_decay (the optimizer's applies). no_decay_names: the
            # user's filter on Parameter.name, as MindSpore's group examples filter by name
            def own(p):
                name = self.names.get(id(p))
                if name in optimizer.no_decay or any(part in p.name for part in optimizer.no_decay_names):
                    return 0.0
                if below is not None and p.ndim < below:  # the users' `p.ndim < 2`
                    return 0.0
                return optimizer.regularizers.get(name)
            groups = [{"params": [p for p in params if own(p) is None]}]
            groups += [{"params": [p], "weight_decay": own(p)} for p in params if own(p) is not None]
            params = [g for g in groups if g["params"]]
        # a "default" setting is left out of the constructor, as a user who does not set it
        kw = {k: v for k, v in (("learning_rate", optimizer.lr), ("weight_decay", optimizer.weight_decay))
              if v != "default"}
        if optimizer.name == "sgd":
            self.opt = nn.SGD(params, **kw)
        elif optimizer.name == "momentum":
            for field, arg in (("lr", "learning_rate"), ("momentum", "momentum")):
                if getattr(optimizer, field) == "default":
                    raise Unsupported(f"nn.Momentum has no default {arg}: it is a required argument")
            self.opt = nn.Momentum(params, momentum=optimizer.momentum, **kw)
        else:
            cls = nn.Adam if optimizer.name == "adam" else nn.AdamWeightDecay
            if optimizer.betas != "default":
                kw["beta1"], kw["beta2"] = optimizer.betas
            if optimizer.eps != "default":
                kw["eps"] = optimizer.eps
            self.opt = cls(params, **kw)
        self.clip = optimizer.clip_global_norm
        self.clip_norm = optimizer.clip_norm
        # the optimizer's parameters that are clipped (and count in the global norm): all but no_clip
        clipped = [i for i, p in enumerate(self.opt.parameters) if self.names.get(id(p)) not in optimizer.no_clip]
        every = len(clipped) == len(self.opt.parameters)
        self.grad_fns = {}
        self.trainers = {}
        # data-parallel, as MindSpore's tutorial writes a custom loop: the reducer over the optimizer's parameters,
        # its mean as the parallel context says
        self.reducer = None if self.data_parallel is None else nn.DistributedGradReducer(self.opt.parameters)
        self.unsynced = None  # no_sync: the gradients this rank accumulated without reducing them

        def apply(grads):
            if self.clip is not None and every:
                grads = ops.clip_by_global_norm(grads, self.clip)
            elif self.clip is not None:  # clip only the others: no_clip is left out of the global norm
                some = ops.clip_by_global_norm(tuple(grads[i] for i in clipped), self.clip)
                grads = list(grads)
                for j, i in enumerate(clipped):
                    grads[i] = some[j]
                grads = tuple(grads)
            elif self.clip_norm is not None:  # per tensor: clip_by_norm of a tuple would clip by the joint norm
                grads = list(grads)
                for i in clipped:
                    grads[i] = ops.clip_by_norm(grads[i], self.clip_norm)
                grads = tuple(grads)
            return self.opt(grads)
        self.apply = compiled_update(apply) if self.graph else apply

    def set_lr(self, lr):
        # the optimizer keeps its learning rate in a Parameter; MindSpore's own LearningRateScheduler
        # callback changes it with F.assign (Parameter.set_data is not seen by a PyNative optimizer step)
        ops.assign(self.opt.learning_rate, ms.Tensor(lr, ms.float32))

    def defaults(self):
        """Read from the built objects. nn.BatchNorm1d's constructor takes the old statistic's weight
        and stores 1 - momentum in its `momentum` attribute: the new batch's weight, the spec's convention.
        `<layer>.bias`: whether the built nn.Dense / nn.Conv2d holds a bias Parameter. `<layer>.rate`:
        measured, the fraction of DROPOUT_PROBE ones the dropout Cell zeroes in train mode (its mode put back)."""
        out = {}
        for name in defaults_of(self.model, self.opt_spec):
            owner, field = name.split(".")
            if field == "bias":
                out[name] = self.layers[owner].bias is not None
                continue
            if field == "rate":
                out[name] = self._zeroed(self.layers[owner])
                continue
            if field == "padding":  # measured: the side of the built Cell's output on an image of ones
                c_in, _, k = self.model.layers[owner].conv2d
                y = self.layers[owner](ops.ones((1, c_in, PADDING_PROBE, PADDING_PROBE), ms.float32))
                out[name] = padding_from(y.shape[-1], k)
                continue
            if owner == "optimizer":
                read = {"lr": lambda o: o.learning_rate, "weight_decay": lambda o: o.weight_decay,
                        "momentum": lambda o: o.momentum, "betas": lambda o: (o.beta1, o.beta2),
                        "eps": lambda o: o.eps}[field]
                value = read(self.opt)
            else:
                cell = self.layers[owner]  # nn.LayerNorm names its epsilon `epsilon`
                value = getattr(cell, "epsilon" if field == "eps" and self.model.layers[owner].layernorm else field)
            out[name] = [_scalar(v) for v in value] if field == "betas" else _scalar(value)
        return out

    @staticmethod
    def _zeroed(layer) -> float:
        """The fraction of DROPOUT_PROBE ones `layer` zeroes when called in train mode."""
        mode = layer.training
        layer.set_train(True)
        try:
            y = layer(ops.ones(DROPOUT_PROBE, ms.float32)).asnumpy()
        finally:
            layer.set_train(mode)
        return float((y == 0).mean())

    def optimizer_params(self):
        return [self.names.get(id(p), f"<{p.name}>") for p in self.opt.parameters]

    # ------------------------------------------------------------ steps
    def _model(self, path):
        """The model Cell for this step path (made once per path, as a user's model is made once)."""
        key = tuple(path)
        if key not in self.models:
            flatten = layer_kinds.flatten_before(self.model, path)
            self.models[key] = StepNet(self.net, [self.layers[n] for n in path],
                                       [n in self.model.detach_after for n in path],
                                       [i in flatten for i in range(len(path))])
        return self.models[key]

    def _criterion(self, loss: CrossEntropy):
        """nn.CrossEntropyLoss as the user builds it, once: the settings the case writes out, those left to
        "default" left out. It always takes logits (it has no from_logits: true and default pass nothing)."""
        if self.criterion is None:
            settings = given_loss(loss)
            settings.pop("from_logits", None)
            self.criterion = nn.CrossEntropyLoss(**settings)
        return self.criterion

    def _forward_fn(self, path, reduce=True, loss=None, touch=()):
        fn = self._loss_fn(path, reduce, loss)
        if not touch:
            return fn
        touched = [p for name in touch for p in self.layers[name].get_parameters()]

        def touched_fn(x, t):  # the unused-parameter workaround: loss + 0 * p.sum()
            value = fn(x, t)
            for p in touched:
                value = value + 0 * p.sum()
            return value
        return touched_fn

    def _loss_fn(self, path, reduce=True, loss=None):
        model = self._model(path)
        if loss is not None:
            criterion = self._criterion(loss)

            def ce_fn(x, t):  # the tutorials' forward_fn with the user's loss_fn = nn.CrossEntropyLoss(...)
                return criterion(model(x), t)
            return ce_fn

        def forward_fn(x, t):  # the tutorials' forward_fn: the model, then the loss
            return ((model(x) - t) ** 2).mean()

        def per_sample_fn(x, t):  # each sample's loss, a vector
            squared = (model(x) - t) ** 2
            return squared.reshape(squared.shape[0], -1).mean(1)
        return forward_fn if reduce else per_sample_fn

    @staticmethod
    def _target(target, loss):
        """The target Tensor: float32, or a cross-entropy's labels as int32, what nn.CrossEntropyLoss takes
        (its examples' dtype; the labels are small class indices and the ignored label)."""
        return ms.Tensor(target.astype(np.int32) if loss is not None else target)

    def forward(self, path, x, target, train, backward, reduce=True, loss=None, touch=(), sync=True):
        # reaches the Cells the net registered, no others, as net.set_train() does in user code; a
        # graph already compiled from a plain function (value_and_grad's) is not recompiled by it
        self._model(path).set_train(train)
        x, t = ms.Tensor(x), self._target(target, loss)  # int64 row indices for an embedding path
        key = (tuple(path), reduce, tuple(touch))
        if not backward:  # the tutorials' eval: call the model Cell (in GRAPH_MODE, compiled per phase)
            return float(self._forward_fn(path, reduce, loss, touch)(x, t).asnumpy().mean())
        if key not in self.grad_fns:
            self.grad_fns[key] = ms.value_and_grad(self._forward_fn(path, reduce, loss, touch), None,
                                                   self.opt.parameters)
        loss, grads = first_line(self.grad_fns[key], x, t)
        if self.reducer is not None and not sync:  # accumulated on this rank alone, reduced with the next backward's
            self.unsynced = grads if self.unsynced is None else tuple(a + g for a, g in zip(self.unsynced, grads))
            return float(loss.asnumpy().mean())
        if self.reducer is not None:
            if self.unsynced is not None:
                grads, self.unsynced = tuple(a + g for a, g in zip(self.unsynced, grads)), None
            grads = self.reducer(grads)
        # no clear since the last grads: accumulate by adding the returned tuples (the documented way)
        self.acc = grads if self.acc is None else tuple(a + g for a, g in zip(self.acc, grads))
        return float(loss.asnumpy().mean())

    def clear_grads(self, mode):
        self.unsynced = None
        if mode == "default":
            self.acc = None  # nothing to call: the next grad_fn returns a fresh tuple
        elif mode == "zeros":
            self.acc = tuple(ops.zeros_like(p) for p in self.opt.parameters)  # the accumulator's reset
        else:
            raise Unsupported("MindSpore has no None gradient to clear to: value_and_grad returns a tensor "
                              "for every weight and optimizer(grads) needs one per parameter")

    def update(self):
        if self.acc is None:
            raise Unsupported("an update without a backward pass since clearing: MindSpore has no "
                              "gradient tuple to hand optimizer(grads)")
        first_line(self.apply, self.acc)

    def train_step(self, path, x, target, train, loss=None):
        key = tuple(path)
        if key not in self.trainers:  # made once per path, as the model Cell is; the loss Cell once per case
            self.trainers[key] = one_step_cell(self._model(path), self.opt,
                                               self.clip is not None or self.clip_norm is not None,
                                               None if loss is None else self._criterion(loss))
        trainer = self.trainers[key]
        trainer.set_train(train)  # Model.train calls set_train() on it; an eval step asks for set_train(False)
        return float(first_line(trainer, ms.Tensor(x), self._target(target, loss)).asnumpy())

    # ------------------------------------------------------------ reading back
    def _numpy(self, name, tensor):
        array = tensor.asnumpy().astype(np.float64)
        return array.T if self._is_linear_weight(name) else array

    def grads(self):
        out = dict.fromkeys(self.params)
        if self.acc is not None:
            for param, grad in zip(self.opt.parameters, self.acc):
                name = self.names.get(id(param))
                if name is not None:
                    out[name] = self._numpy(name, grad)
        return out

    def values(self):
        """A layer built without a bias reads as a zero bias (of its out features)."""
        return {n: self._absent(n) if p is None else self._numpy(n, p) for n, p in self.params.items()}

    def _absent(self, name):
        return np.zeros(self.model.layers[name.split(".")[0]].out_features())

    def trainable(self):
        return {n: p is not None and bool(p.requires_grad) for n, p in self.params.items()}
