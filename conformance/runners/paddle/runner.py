"""PaddlePaddle adapter: the code a Paddle 3 user writes, in three shapes. This module holds the
adapter and its hand-written dygraph loop (eager / loop):
    loss = ((model(x) - t) ** 2).mean(); loss.backward(); opt.step(); opt.clear_grad()
graph.py holds --mode graph (backend "to_static": the same loop around `paddle.jit.to_static(layer)`;
backend "static": the static-graph Program run by an Executor), trainer.py --api trainer (hapi's
`paddle.Model`); PaddleRunner dispatches to them.

"Default" clearing is plain `opt.clear_grad()`, whatever its default is in the installed version
(Paddle 3: set_to_zero=True). Linear weights are stored (in, out), the canonical layout. The
BatchNorm statistics `_mean` / `_variance` are parameters in Paddle (stop_gradient=True), so they
are part of `model.parameters()`. Freezing a parameter is `param.stop_gradient = True`; `param.trainable`
is the same flag seen from the other side (its setter sets stop_gradient = not trainable). Freezing a
layer is `layer.requires_grad_(False)` (Paddle 3; 2.6 has no layer-level switch: the loop it runs, over
layer.parameters(), is written out). A setting the case leaves to "default" is left out of the
constructor; defaults() reads back what the built layer or optimizer holds. Excluding from decay by
name: AdamW's apply_decay_param_fun is the user's filter (on the name Paddle hands it); the other
optimizers take no such function, so the filter builds parameter groups from named_parameters().
"""
from __future__ import annotations

import functools
import sys
import warnings

import numpy as np

with warnings.catch_warnings():  # paddle warns at import about ccache; not ours to report
    warnings.simplefilter("ignore")
    import paddle
# BatchNorm warns on every train-mode forward that it tracks running statistics: noise, not a finding
warnings.filterwarnings("ignore", message="When training, we now always track global mean and variance")

from . import OFFERS
from ..base import Runner, Unavailable, Unsupported, build_layers, given_loss, hold, loaded
from ...spec import DROPOUT_PROBE, PADDING_PROBE, CrossEntropy, padding_from, Model, Optimizer, defaults_of, param_names
from ...spec import layers as layer_kinds
from .graph import StaticProgram, ToStatic
from .trainer import HapiTrainer


class _Net(paddle.nn.Layer):
    """The user's model: its layers are attributes or in a container (registered or not, as the case
    says); forward runs the layers of the step's path, the one model a trainer is given."""

    def forward(self, x):
        return self.run_path(x)



def criterion(loss: CrossEntropy):
    """The paddle loss object a user writes for the case's cross-entropy: paddle.nn.CrossEntropyLoss with the
    settings the case writes out (paddle's from_logits is use_softmax), the others left out."""
    kw = {"use_softmax" if k == "from_logits" else k: v for k, v in given_loss(loss).items()}
    return paddle.nn.CrossEntropyLoss(**kw)


def dropout_rate(layer) -> float:
    """Dygraph: the fraction of DROPOUT_PROBE ones the dropout layer zeroes when called in train mode."""
    was = layer.training
    layer.train()
    zeroed = float((layer(paddle.ones([DROPOUT_PROBE])) == 0).astype("float64").mean())
    layer.training = was
    return zeroed


def conv_sides(model: Model, layers: dict) -> dict[str, int]:
    """Dygraph: the side of each padding-default conv's output on a PADDING_PROBE image of ones."""
    with paddle.no_grad():
        return {name: layers[name](paddle.ones([1, spec.conv2d[0], PADDING_PROBE, PADDING_PROBE])).shape[-1]
                for name, spec in model.layers.items() if spec.padding == "default"}


def read_defaults(model: Model, optimizer: Optimizer, layers: dict, opt, rate=dropout_rate,
                  sides=None) -> dict[str, object]:
    """What the built layers and optimizer hold for each setting left to "default", in the spec's
    convention (BatchNorm momentum: the new batch's weight, 1 - paddle's momentum; a bias: whether the layer
    holds one); a positional dropout's `rate`, measured by `rate(layer)`; a conv's `padding`, from the side of
    its output on a PADDING_PROBE image (`sides`, measured by conv_sides where not given)."""
    sides = conv_sides(model, layers) if sides is None else sides
    out = {}
    for name in defaults_of(model, optimizer):
        owner, field = name.split(".")
        if owner != "optimizer":
            layer = layers[owner]
            if field == "bias":
                out[name] = layer.bias is not None
            elif field == "rate":
                out[name] = rate(layer)
            elif field == "padding":
                out[name] = padding_from(sides[owner], model.layers[owner].conv2d[2])
            else:
                out[name] = 1.0 - float(layer._momentum) if field == "momentum" else float(layer._epsilon)
        elif field == "lr":
            out[name] = float(opt._learning_rate)
        elif field == "weight_decay":
            if optimizer.name == "adamw":
                out[name] = float(opt._weight_decay)
            else:  # L2Decay(coeff) or None; Momentum moves it into its fused update
                reg = opt.regularization
                out[name] = float(reg._coeff) if reg is not None else float(getattr(opt, "_regularization_coeff", 0.0))
        elif field == "momentum":
            out[name] = float(opt._momentum)
        elif field == "betas":
            out[name] = [float(opt._beta1), float(opt._beta2)]
        else:
            out[name] = float(opt._epsilon)
    return out


class PaddleRunner(ToStatic, StaticProgram, HapiTrainer, Runner):
    framework = "paddle"
    offers = OFFERS
    # listed by name: a feature the engine adds later stays unsupported until the adapter expresses it
    features = frozenset({"defaults", "layernorm", "freeze-steps", "lr-schedule", "no-decay", "no-decay-names",
                          "init-default", "per-sample-loss", "clip-norm", "no-clip", "embedding", "conv2d",
                          "dropout", "cross-entropy", "positional-args", "data-parallel", "touch",
                          "no-sync", "sync-batchnorm"})
    read_defaults = staticmethod(read_defaults)  # graph.py reads a static program's layers with it
    criterion = staticmethod(criterion)  # graph.py builds it in a program, trainer.py hands it to hapi
    # canonical role -> the paddle attribute holding it; BatchNorm(name=n) names its statistics
    # n_mean / n_variance in a static program (graph.py)
    roles = {"weight": "weight", "bias": "bias", "running_mean": "_mean", "running_var": "_variance"}

    def __init__(self, run=None, **axes):
        super().__init__(run, **axes)
        if self.device == "cuda":
            if not paddle.device.is_compiled_with_cuda():
                raise Unavailable(f"--device cuda: paddle {paddle.__version__} is a CPU build "
                                  f"(install paddlepaddle-gpu)")
            if paddle.device.cuda.device_count() == 0:
                raise Unavailable(f"--device cuda: paddle {paddle.__version__} sees no GPU")
            place = "gpu"
        elif self.device == "ascend":
            if "npu" not in paddle.device.get_all_custom_device_type():
                raise Unavailable(f"--device ascend: paddle {paddle.__version__} has no 'npu' custom device "
                                  f"(install the PaddleCustomDevice NPU plugin)")
            place = "npu"
        else:
            place = "cpu"
        paddle.set_device(place)
        self.static = self.mode == "graph" and self.backend == "static"
        if self.run.replicas != "1":  # one rank: paddle.distributed.launch's environment says where the group meets
            paddle.distributed.init_parallel_env()
            self.rank = paddle.distributed.get_rank()
        self.parallel = None

    @staticmethod
    def launch_ranks(world: int, script: str, nodes: int = 1, node: int = 0, master: str = "") -> list[str]:
        """paddle.distributed.launch on this host: it picks a free localhost port for its store, and writes each
        rank's log under ./log (the rank group's temporary folder). On several nodes: --nnodes, this node's --rank
        and the --master (node 0's store) every node meets at."""
        if nodes == 1:
            return [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", str(world), script]
        return [sys.executable, "-m", "paddle.distributed.launch", "--nnodes", str(nodes), "--rank", str(node),
                "--master", master, "--nproc_per_node", str(world // nodes), script]

    @staticmethod
    def version() -> str:
        return str(paddle.__version__)

    # ------------------------------------------------------------ the model, as the user builds it
    def _make_layers(self, model: Model, attrs=None):
        """Every layer and the net holding them as model.container says. `attrs(name, role)` gives the
        ParamAttr of a parameter (static programs share parameters across programs by name)."""
        images = layer_kinds.image_batchnorms(model)

        def make(name, spec):
            a = (lambda role: None) if attrs is None else functools.partial(attrs, name)
            # bias "default": bias_attr left out (a static program then names the bias itself: _static_names)
            bias = {} if spec.bias == "default" else {"bias_attr": a("bias") if spec.bias else False}
            if spec.linear:
                return paddle.nn.Linear(*spec.linear, weight_attr=a("weight"), **bias)
            if spec.conv2d:  # NCHW input, weight (out, in, kh, kw): the canonical layout
                c_in, c_out, k = spec.conv2d
                padding = {} if spec.padding == "default" else {"padding": k // 2}
                return paddle.nn.Conv2D(c_in, c_out, k, stride=1, weight_attr=a("weight"), **padding, **bias)
            if spec.embedding:  # the default constructor: sparse=False, a dense gradient
                return paddle.nn.Embedding(*spec.embedding, padding_idx=spec.padding_idx, weight_attr=a("weight"))
            if spec.dropout:  # mode "upscale_in_train" by default: the reference's scaling
                # positional: Dropout(0.1), as ported code writes it
                return paddle.nn.Dropout(spec.dropout) if spec.positional else paddle.nn.Dropout(p=spec.dropout)
            kw = {} if spec.eps == "default" else {"epsilon": spec.eps}  # "default": left out
            if spec.layernorm:
                return paddle.nn.LayerNorm(spec.layernorm, weight_attr=a("weight"), bias_attr=a("bias"), **kw)
            # paddle's momentum weighs the old statistic: the opposite of the neutral one; `name`
            # names the statistics name_mean / name_variance in a static program
            if spec.momentum != "default":
                kw["momentum"] = 1.0 - spec.momentum
            # BatchNorm2D after a conv (per channel over N, H, W), BatchNorm1D on features
            kind = paddle.nn.BatchNorm2D if name in images else paddle.nn.BatchNorm1D
            if spec.synchronized:  # statistics over every replica's rows, images or vectors
                kind = paddle.nn.SyncBatchNorm
            return kind(spec.batchnorm, weight_attr=a("weight"), bias_attr=a("bias"),
                        name=None if attrs is None else name, **kw)

        layers = build_layers(model, make)  # a tie is the same Layer object
        if attrs is not None:  # the name paddle gave each bias left to default (deterministic under a unique_name.guard)
            self.static_names = {f"{n}.bias": layers[n].bias.name for n, spec in model.layers.items()
                                 if spec.bias == "default" and not spec.tie and layers[n].bias is not None}
        attributes, container = hold(model, layers, paddle.nn.LayerList, paddle.nn.LayerDict)
        net = _Net()
        for name, layer in attributes.items():
            setattr(net, name, layer)
        if container is not None:
            net.blocks = container  # Layer.__setattr__ registers only Layers and Paddle containers
        return layers, net

    def build(self, model: Model, values):
        paddle.seed(0)
        self.model = model
        if self.static:
            return self._static_build(model, values)
        self.layers, self.net = self._make_layers(model)
        self.tensors = {name: getattr(self.layers[name.split(".")[0]], self.roles[name.split(".")[1]])
                        for name in param_names(model)}
        # a bias its default left out: a zero bias without gradient (values, grads), not trainable
        self.absent = {n: np.zeros_like(values[n], dtype=np.float64) for n, t in self.tensors.items() if t is None}
        self.tensors = {n: t for n, t in self.tensors.items() if t is not None}
        for name, value in loaded(model, values).items():
            if name in self.absent:
                continue
            self.tensors[name].set_value(np.asarray(value, dtype=np.float32))
        self.set_trainable(model.frozen, False)
        self.names = {id(t): n for n, t in self.tensors.items()}
        self.hapi = None  # trainer.py: hapi's Model, made at the case's first step
        # data-parallel: wrapped once built and frozen, as a user does; the case's find_unused_parameters. hapi's
        # Model wraps the net itself (trainer.py), and a second wrapper would hook every gradient twice
        self.parallel = None if self.data_parallel is None or self.api == "trainer" else \
            paddle.DataParallel(self.net, find_unused_parameters=self.data_parallel.find_unused)
        if self.mode == "graph":
            self._start_to_static()

    def make_optimizer(self, optimizer: Optimizer):
        self.optimizer = optimizer
        if self.static:
            return
        if optimizer.params == "default":
            params = self.net.parameters()
        elif optimizer.params == "all":
            params = self.net.parameters() + self.net.buffers()
        else:
            params = [self.tensors[n] for n in optimizer.params]
        for name, coeff in optimizer.regularizers.items():
            # what ParamAttr(regularizer=L2Decay(coeff)) sets; the docs say it wins over the optimizer's
            self.tensors[name].regularizer = paddle.regularizer.L2Decay(coeff)
        for name in optimizer.no_clip:
            self.tensors[name].need_clip = False  # what ParamAttr(need_clip=False) sets
        no_decay = {self.tensors[n].name for n in optimizer.no_decay}
        if optimizer.no_decay_names and optimizer.name != "adamw":  # groups: the user filters named_parameters()
            no_decay |= {p.name for n, p in self.net.named_parameters()
                         if any(part in n for part in optimizer.no_decay_names)}
        self.opt = self._new_optimizer(params, no_decay)

    def _new_optimizer(self, parameters, no_decay=frozenset()):
        """The paddle optimizer a user writes for self.optimizer over `parameters` (the static
        program's minimize() makes one per program too); `no_decay`: the names (Tensor.name) of the
        parameters excluded from weight decay. A setting left to "default" is left out. AdamW with
        no_decay_names: the user's filter is apply_decay_param_fun itself, on the name it is handed."""
        optimizer = self.optimizer
        kw = dict(parameters=parameters)
        if optimizer.lr != "default":
            kw["learning_rate"] = optimizer.lr
        if optimizer.clip_global_norm is not None:
            kw["grad_clip"] = paddle.nn.ClipGradByGlobalNorm(clip_norm=optimizer.clip_global_norm)
        if optimizer.clip_norm is not None:
            kw["grad_clip"] = paddle.nn.ClipGradByNorm(clip_norm=optimizer.clip_norm)  # each gradient alone
        if optimizer.weight_decay != "default" and (optimizer.name == "adamw" or optimizer.weight_decay):
            # a float: L2Decay(weight_decay) for sgd/momentum/adam, the decoupled coefficient for AdamW
            kw["weight_decay"] = optimizer.weight_decay
        if optimizer.name in ("adam", "adamw"):
            if optimizer.betas != "default":
                kw["beta1"], kw["beta2"] = optimizer.betas
            if optimizer.eps != "default":
                kw["epsilon"] = optimizer.eps
        if optimizer.name == "momentum" and optimizer.momentum != "default":
            kw["momentum"] = optimizer.momentum
        if optimizer.no_decay_names and optimizer.name == "adamw":
            kw["apply_decay_param_fun"] = lambda name: not any(part in name for part in optimizer.no_decay_names)
        elif no_decay:
            if optimizer.name == "adamw":  # the docs' way: a predicate on the parameter's name
                kw["apply_decay_param_fun"] = lambda name: name not in no_decay
            else:  # parameter groups, the excluded ones with weight_decay 0 (dygraph: graph.py refuses them)
                groups = [{"params": [p for p in parameters if p.name not in no_decay]},
                          {"params": [p for p in parameters if p.name in no_decay], "weight_decay": 0.0}]
                kw["parameters"] = [g for g in groups if g["params"]]
        return {"sgd": paddle.optimizer.SGD, "momentum": paddle.optimizer.Momentum,
                "adam": paddle.optimizer.Adam, "adamw": paddle.optimizer.AdamW}[optimizer.name](**kw)

    def optimizer_params(self):
        if self.static:
            return list(self.static_opt_params)
        held = [p for group in self.opt._param_groups
                for p in (group["params"] if isinstance(group, dict) else [group])]
        return [self.names.get(id(p), "<unnamed tensor>") for p in held]

    # ------------------------------------------------------------ settings, freezing, learning rate
    def defaults(self):
        if self.static:
            return self._static_defaults()
        return self.read_defaults(self.model, self.optimizer, self.layers, self.opt)

    def set_trainable(self, names, trainable):
        if self.static:
            return self._static_set_trainable(names, trainable)
        for name in names:
            if name in self.layers:  # the layer-level switch
                layer = self.layers[name]
                if hasattr(layer, "requires_grad_"):
                    layer.requires_grad_(trainable)
                else:  # Paddle 2.6: what Paddle 3's requires_grad_ does
                    for p in layer.parameters():
                        p.stop_gradient = not trainable
            else:
                self.tensors[name].stop_gradient = not trainable

    def set_lr(self, lr):
        if self.static:
            raise Unsupported("Optimizer.set_lr is dygraph-only: a Program built by minimize() holds its learning rate")
        self.opt.set_lr(lr)

    # ------------------------------------------------------------ one step
    def _run_path(self, path, x):
        y, flatten = x, layer_kinds.flatten_before(self.model, path)
        for i, name in enumerate(path):
            # what a user writes before a Linear that takes an image: paddle.flatten(x, 1), channels first
            y = self.layers[name](paddle.flatten(y, 1) if i in flatten else y)
            if name in self.model.detach_after:
                y = y.detach()
        return y

    def forward(self, path, x, target, train, backward, reduce=True, loss=None, touch=(), sync=True):
        if not sync:  # forward and backward under DataParallel's no_sync: this rank accumulates its own gradients
            with self.parallel.no_sync():
                return self.forward(path, x, target, train, backward, reduce, loss, touch)
        if self.static:
            if touch:
                raise Unsupported("the static program's loss is built once per path: this adapter adds no "
                                  "parameters times zero to it")
            return self._static_forward(path, x, target, train, backward, reduce, loss)
        if self.api == "trainer":
            return self._trainer_forward(path, x, target, train, loss)
        model = self.parallel or self.net
        if train:
            model.train()  # reaches only registered sublayers, as in user code
        else:
            model.eval()
        y = paddle.to_tensor(x)
        if self.parallel is not None:  # through DataParallel, which the net's forward runs the step's path for
            # (in graph mode the to_static path: a compiled program inside DataParallel)
            self.net.run_path = functools.partial(self._compiled_path if self.mode == "graph" else self._run_path, path)
            y = self.parallel(y)
        else:
            y = self._compiled_path(path, y) if self.mode == "graph" else self._run_path(path, y)
        if loss is not None:  # class scores against int64 labels
            value = criterion(loss)(y, paddle.to_tensor(target))
        else:
            squared = (y - paddle.to_tensor(target)) ** 2
            value = squared.mean() if reduce else squared.flatten(1).mean(1)  # per sample: a vector
        for name in touch:  # the unused-parameter workaround: loss + 0 * p.sum()
            value = value + 0 * sum(p.sum() for p in self.layers[name].parameters())
        if backward:
            value.backward()
        return float(value.mean().item())

    def clear_grads(self, mode):
        if self.static:
            return self._static_clear(mode)
        if mode == "default":
            self.opt.clear_grad()
        else:
            self.opt.clear_grad(set_to_zero=(mode == "zeros"))

    def update(self):
        if self.static:
            return self._static_update()
        self.opt.step()  # global-norm clipping, if any, is the optimizer's grad_clip

    # ------------------------------------------------------------ reading back
    def grads(self):
        if self.static:
            return {n: self.static_grads.get(n) for n in param_names(self.model)}
        return {n: None if n in self.absent or self.tensors[n].grad is None
                else self.tensors[n].grad.numpy().astype(np.float64) for n in param_names(self.model)}

    def values(self):
        if self.static:
            return self._static_values()
        return {n: self.absent[n] if n in self.absent else self.tensors[n].numpy().astype(np.float64)
                for n in param_names(self.model)}

    def trainable(self):
        if self.static:
            return dict(self.static_trainable)
        return {n: n not in self.absent and bool(self.tensors[n].trainable) for n in param_names(self.model)}
