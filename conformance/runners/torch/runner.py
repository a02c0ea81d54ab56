"""PyTorch adapter: the code a torch user writes.

    opt.zero_grad(); loss = ((model(x) - t) ** 2).mean(); loss.backward(); opt.step()

"Default" clearing is plain `opt.zero_grad()`, whatever its default is in the installed version;
any other setting the case leaves to "default" is left out of its constructor, as a user who does not
set it, and read back from the built module or optimizer. Layers are torch.nn's: Linear, Conv2d
(padding kernel // 2), BatchNorm1d or BatchNorm2d (after a conv), LayerNorm, Embedding (padding_idx,
dense gradient), Dropout; an image into a linear layer is flattened in forward, `y.flatten(1)`.
Freezing uses `module.requires_grad_` for a layer and `tensor.requires_grad_` for one parameter;
excluding from decay, torch parameter groups with weight_decay 0 (by name: a filter over
named_parameters(), as HF's `no_decay = ["bias", "LayerNorm.weight"]`); a learning-rate change, each
`param_groups[i]['lr']`; clipping, `clip_grad_norm_` over the clipped parameters together (global) or
over each alone (per variable).

Data-parallel runs (--replicas 2): each rank is one process that torchrun starts; it joins torch.distributed's
gloo group and wraps the net in DistributedDataParallel (its defaults, find_unused_parameters as the case says),
which takes the step's path as a forward argument, as a model whose forward branches on its input. In graph
mode DDP wraps the compiled paths. A step that does not synchronise runs its forward and backward under
ddp.no_sync(); a step's `touch` adds 0 * p.sum() of those layers' parameters to the loss.
--engine fsdp1 wraps the same module in FullyShardedDataParallel instead (no auto-wrap policy: one flat parameter,
use_orig_params=True, which per-parameter groups need, device_id the run's device, as FSDP refuses a CPU module
without one), its no_sync() for a step that does not synchronise; --engine fsdp2 calls fully_shard on it (its
parameters become DTensors sharded on dim 0), set_requires_gradient_sync(False) for such a step. Neither has
find_unused_parameters. The observations read whole tensors, as a user saving a checkpoint gathers them:
FSDP.summon_full_params(with_grads=True) and DTensor.full_tensor().

Here: the adapter class (model, optimizer, the loop's primitives, the observations). --mode graph
compiles each path's forward with graph.py; trainer.py says why there is no --api trainer.
"""
from __future__ import annotations

import contextlib
import sys

import numpy as np
import torch
import torch.distributed as dist

from . import OFFERS, graph
from ..base import RankGroup, Runner, Unavailable, build_layers, given_loss, hold, loaded, nvidia_driver
from ...spec import DROPOUT_PROBE, PADDING_PROBE, Model, padding_from, Optimizer, defaults_of, param_names
from ...spec import layers as layer_kinds


def _given(**settings):
    """The constructor arguments a case sets: a setting left to "default" is left out."""
    return {k: v for k, v in settings.items() if v != "default"}


def torchrun(world: int, script: str, nodes: int = 1, node: int = 0, master: str = "") -> list[str]:
    """torchrun on this host; --standalone lets it pick a free localhost port for its rendezvous. On several
    nodes, its static rendezvous: node 0's store at `master`, each node's ranks numbered from its node rank."""
    if nodes == 1:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={world}", script]
    host, port = master.rsplit(":", 1)
    return [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes}", f"--node-rank={node}",
            f"--nproc-per-node={world // nodes}", f"--master-addr={host}", f"--master-port={port}", script]


class TorchRunner(Runner):
    framework = "torch"
    offers = OFFERS
    features = frozenset({"defaults", "layernorm", "freeze-steps", "lr-schedule", "no-decay", "no-decay-names", "no-decay-ndim",
                          "init-default", "per-sample-loss", "clip-norm", "no-clip", "embedding", "conv2d",
                          "dropout", "cross-entropy", "positional-args", "data-parallel", "touch",
                          "no-sync", "sync-batchnorm"})
    parallelism = RankGroup(launch=torchrun)  # DistributedDataParallel, a process per rank

    def __init__(self, run=None, **axes):
        super().__init__(run, **axes)
        if self.device == "cuda" and not torch.cuda.is_available():
            raise Unavailable(f"--device cuda: torch {torch.__version__} sees no CUDA device "
                              f"(torch.cuda.is_available() is False)")
        self.torch_device = torch.device(self.device)
        if self.mode == "graph":
            graph.start(self.backend, self.torch_device)
        if self.run.replicas != "1":  # one rank: torchrun's environment says where the group meets
            dist.init_process_group("gloo")
            self.rank = dist.get_rank()
            # paid while the group starts, not by the first case: gloo connects on the first collectives
            warm_up = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
            warm_up(torch.ones(1, 1)).sum().backward()
        self.ddp = None

    @staticmethod
    def version() -> str:
        return str(torch.__version__)  # a str subclass whose unpickling imports torch

    def accelerator(self) -> str:
        if self.torch_device.type != "cuda":
            return ""
        gpu = torch.cuda.get_device_properties(self.torch_device)
        # TF32 is the usual suspect when a cuda run differs from the cpu: say which ops may use it
        tf32 = (f"TF32 matmul {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}, "
                f"cuDNN conv {'on' if torch.backends.cudnn.allow_tf32 else 'off'}")
        return (f"{gpu.name} (compute capability {gpu.major}.{gpu.minor}, {gpu.total_memory / 2**30:.0f} GiB), "
                f"driver {nvidia_driver()}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, {tf32}")

    def build(self, model: Model, values):
        torch.manual_seed(0)
        self.model = model
        images = layer_kinds.image_batchnorms(model)  # BatchNorm2d, the others BatchNorm1d

        def make(name, spec):
            if spec.linear:
                return torch.nn.Linear(*spec.linear, **_given(bias=spec.bias))
            if spec.conv2d:  # stride 1 (the default), zero padding kernel // 2: the image keeps its size
                c_in, c_out, k = spec.conv2d
                padding = {} if spec.padding == "default" else {"padding": k // 2}
                return torch.nn.Conv2d(c_in, c_out, k, **padding, **_given(bias=spec.bias))
            if spec.embedding:  # dense gradient (sparse=False, the default)
                return torch.nn.Embedding(*spec.embedding, padding_idx=spec.padding_idx)
            if spec.dropout:  # positional: Dropout(0.1), as ported code writes it
                return torch.nn.Dropout(spec.dropout) if spec.positional else torch.nn.Dropout(p=spec.dropout)
            if spec.layernorm:  # over the last axis, with weight and bias (elementwise_affine)
                return torch.nn.LayerNorm(spec.layernorm, **_given(eps=spec.eps))
            if spec.synchronized:  # statistics over every replica's rows (DDP's process group), images or vectors
                return torch.nn.SyncBatchNorm(spec.batchnorm, **_given(eps=spec.eps, momentum=spec.momentum))
            norm = torch.nn.BatchNorm2d if name in images else torch.nn.BatchNorm1d
            return norm(spec.batchnorm, **_given(eps=spec.eps, momentum=spec.momentum))

        self.layers = layers = build_layers(model, make)  # a tie is the same module object
        attributes, container = hold(model, layers, torch.nn.ModuleList, torch.nn.ModuleDict)
        net = torch.nn.Module()
        for name, layer in attributes.items():
            setattr(net, name, layer)
        if container is not None:
            net.blocks = container  # nn.Module.__setattr__ registers only torch containers
        self.net = net.to(self.torch_device)
        if self.mode == "graph":
            self.compiled = graph.CompiledPaths(self.net, graph.routes(model, attributes, container), self.backend,
                                                lambda path: layer_kinds.flatten_before(model, path))
        for layer in layers.values():
            layer.to(self.torch_device)  # layers the net does not know about must move too
        self.tensors = {name: getattr(layers[name.split(".")[0]], name.split(".")[1])
                        for name in param_names(model)}
        with torch.no_grad():
            for name, value in loaded(model, values).items():
                self.tensors[name].copy_(torch.as_tensor(self._to_torch(name, value)))
        self._set_requires_grad(model.frozen, False)
        self.names = {id(t): n for n, t in self.tensors.items()}
        # wrapped last, as a user wraps the model once it is built and frozen: DDP's defaults
        # (broadcast_buffers=True), its find_unused_parameters as the case says
        # in graph mode it wraps the compiled paths (a compiled module inside DDP: DDP's reducer still hears each
        # gradient as it accumulates, and fullgraph=True keeps every path one graph)
        run_path = (lambda path, x: self.compiled[tuple(path)](x)) if self.mode == "graph" else self._run_path
        self._shapes = {n: tuple(t.shape) for n, t in self.tensors.items()}
        self._unsynced = False  # FSDP1: the last backward ran under no_sync, each rank holding its whole gradients
        self.ddp = None if self.data_parallel is None else self._wrap(_PathForward(self.net, run_path))

    def _wrap(self, module):
        """The run's data-parallel engine around the module (build's last step)."""
        if self.run.engine == "fsdp1":
            from torch.distributed.fsdp import FullyShardedDataParallel
            return FullyShardedDataParallel(module, use_orig_params=True, device_id=self.torch_device)
        if self.run.engine == "fsdp2":
            from torch.distributed.fsdp import fully_shard
            wrapped = fully_shard(module)
            # fully_shard puts new (DTensor) parameters in the layers' places: the names must find those
            self.tensors = {name: getattr(self.layers[name.split(".")[0]], name.split(".")[1])
                            for name in self.tensors}
            self.names = {id(t): n for n, t in self.tensors.items()}
            return wrapped
        return torch.nn.parallel.DistributedDataParallel(module, find_unused_parameters=self.data_parallel.find_unused)

    @contextlib.contextmanager
    def _no_sync(self):
        """The engine's way of leaving a backward's gradients uncombined, each rank accumulating its own."""
        if self.run.engine == "fsdp2":
            self.ddp.set_requires_gradient_sync(False)
            try:
                yield
            finally:
                self.ddp.set_requires_gradient_sync(True)
        else:
            with self.ddp.no_sync():
                yield

    def _gathered(self, grads: bool) -> dict:
        """The whole values or gradients of a sharded model, as numpy, put together from every rank's piece. FSDP1
        (use_orig_params): each rank holds a contiguous piece of each parameter as a 1-D view (empty where it holds
        none of it), in rank order; FSDP2: a DTensor whose local tensor is the rank's chunk of dim 0. Each rank holds
        only its piece's gradient (None where none reached it): a gradient is None where every nonempty piece has
        none, and NaN on a piece without one beside one with. Parameters outside the engine (statistics, a layer the
        net does not hold) are read whole. A collective: every rank reads at the same point of a step, and asks its
        pieces plainly (DTensor.full_tensor() would pair up ranks that hold gradients of different parameters)."""
        fsdp2 = self.run.engine == "fsdp2"
        sharded = {id(p) for p in self.ddp.parameters() if not fsdp2 or hasattr(p, "to_local")}

        def piece(t):
            held = t.grad if grads else t
            local = t.to_local() if fsdp2 else t
            if held is not None and fsdp2:
                held = held.to_local()
            # a copy first: numpy() marks a tensor's storage unresizable, and FSDP1 frees storage by resizing it
            return (local.shape[0] if fsdp2 else local.numel(),
                    None if held is None else held.detach().to("cpu", torch.float64, copy=True).numpy())
        ranks = [None] * dist.get_world_size()
        dist.all_gather_object(ranks, {n: piece(t) for n, t in self.tensors.items() if id(t) in sharded})
        whole = {n: None if (t.grad if grads else t) is None else self._numpy(n, t.grad if grads else t)
                 for n, t in self.tensors.items() if id(t) not in sharded}
        for name in ranks[0]:
            shape = self._shapes[name]
            pieces = [rank[name] for rank in ranks if rank[name][0]]
            if all(array is None for _, array in pieces):
                whole[name] = None
                continue
            if fsdp2:  # chunks of dim 0
                parts = [np.full((rows, *shape[1:]), np.nan) if array is None else array for rows, array in pieces]
            else:
                parts = [np.full(size, np.nan) if array is None else array.ravel() for size, array in pieces]
            whole[name] = self._oriented(name, np.concatenate(parts).reshape(shape))
        return whole

    def _to_torch(self, name, array):
        return np.ascontiguousarray(array.T) if self._is_linear_weight(name) else array

    def _is_linear_weight(self, name):
        layer, role = name.split(".")
        return role == "weight" and self.model.layers[layer].linear is not None

    def _set_requires_grad(self, names, flag):
        """A layer name: the module's own switch, module.requires_grad_; `layer.param`: the tensor's."""
        for name in names:
            (self.layers[name] if name in self.layers else self.tensors[name]).requires_grad_(flag)

    def make_optimizer(self, optimizer: Optimizer):
        if optimizer.params == "default":
            params = list(self.net.parameters())
        elif optimizer.params == "all":
            params = list(self.net.parameters()) + list(self.net.buffers())
        else:
            params = [self.tensors[n] for n in optimizer.params]
        # parameter groups: one per parameter with its own regularizer, one with weight_decay 0 for
        # the parameters excluded from decay (torch's way), the rest with the optimizer's settings
        # no_decay_names: the user's filter over named_parameters(), as HF's `no_decay = ["bias", ...]` is written
        by_name = {id(p) for n, p in self.net.named_parameters() if any(s in n for s in optimizer.no_decay_names)}
        if optimizer.no_decay_ndim_below is not None:  # open_clip's and timm's `p.ndim < 2`
            by_name |= {id(p) for p in self.net.parameters() if p.ndim < optimizer.no_decay_ndim_below}

        def own_decay(p):
            name = self.names.get(id(p))
            return 0.0 if name in optimizer.no_decay or id(p) in by_name else optimizer.regularizers.get(name)
        groups = [{"params": [p for p in params if own_decay(p) is None]}]
        groups += [{"params": [p for p in params if own_decay(p) == 0.0], "weight_decay": 0.0}]
        groups += [{"params": [p], "weight_decay": own_decay(p)} for p in params if own_decay(p)]
        groups = [g for g in groups if g["params"]]
        kw = _given(lr=optimizer.lr, weight_decay=optimizer.weight_decay)
        if optimizer.name == "sgd":
            self.opt = torch.optim.SGD(groups, **kw)
        elif optimizer.name == "momentum":
            self.opt = torch.optim.SGD(groups, **kw, **_given(momentum=optimizer.momentum))
        else:
            cls = torch.optim.Adam if optimizer.name == "adam" else torch.optim.AdamW
            self.opt = cls(groups, **kw, **_given(betas=optimizer.betas, eps=optimizer.eps))
        self.optimizer = optimizer
        self.no_clip = {id(self.tensors[n]) for n in optimizer.no_clip}

    def defaults(self):
        """Each setting the case left out, read from what torch built: the optimizer's `defaults`
        (the constructor's values, which every group without its own inherits) and the layer's
        attribute (BatchNorm momentum is already the new batch's weight)."""
        out = {}
        for name in defaults_of(self.model, self.optimizer):
            owner, field = name.split(".")
            if field == "bias":
                out[name] = self.layers[owner].bias is not None
            elif field == "rate":  # measured: the fraction of ones the layer zeroes in train mode
                layer = self.layers[owner]
                out[name] = float((layer.train()(torch.ones(DROPOUT_PROBE)) == 0).double().mean())
            elif field == "padding":  # measured: the size of the built layer's output on an image
                c_in, _, k = self.model.layers[owner].conv2d
                with torch.no_grad():
                    side = self.layers[owner](torch.ones(1, c_in, PADDING_PROBE, PADDING_PROBE, device=self.torch_device))
                out[name] = padding_from(side.shape[-1], k)
            else:
                value = self.opt.defaults[field] if owner == "optimizer" else getattr(self.layers[owner], field)
                out[name] = [float(b) for b in value] if field == "betas" else float(value)
        return out

    def set_trainable(self, names, trainable):
        self._set_requires_grad(names, trainable)

    def set_lr(self, lr):
        for group in self.opt.param_groups:
            group["lr"] = lr

    def optimizer_params(self):
        return [self.names.get(id(p), "<unnamed tensor>") for g in self.opt.param_groups for p in g["params"]]

    def forward(self, path, x, target, train, backward, reduce=True, loss=None, touch=(), sync=True):
        if not sync:  # forward and backward under DDP's no_sync: this rank accumulates its own gradients
            with self._no_sync():
                loss_value = self.forward(path, x, target, train, backward, reduce, loss, touch)
            self._unsynced = self._unsynced or backward
            return loss_value
        (self.ddp or self.net).train(train)  # reaches only registered submodules, as in user code
        x = torch.as_tensor(x, device=self.torch_device)
        if self.ddp is not None:
            y = self.ddp(x, tuple(path))
        elif self.mode == "graph":
            y = self.compiled[tuple(path)](x)
        else:
            y = self._run_path(path, x)
        target = torch.as_tensor(target, device=self.torch_device)
        if loss is not None:  # torch's CrossEntropyLoss always takes logits: it has no from_logits
            settings = given_loss(loss)
            settings.pop("from_logits", None)
            criterion = torch.nn.CrossEntropyLoss(**settings)
            value = criterion(y, target)
        else:
            squared = (y - target) ** 2
            value = squared.mean() if reduce else squared.flatten(1).mean(1)  # per sample: a vector
        for name in touch:  # the unused-parameter workaround: loss + 0 * p.sum()
            value = value + 0 * sum(p.sum() for p in self.layers[name].parameters())
        if backward:
            value.backward()
            self._unsynced = False
        return float(value.mean().item())

    def _run_path(self, path, x):
        y, flatten = x, layer_kinds.flatten_before(self.model, path)
        for i, name in enumerate(path):
            if i in flatten:
                y = y.flatten(1)
            y = self.layers[name](y)
            if name in self.model.detach_after:
                y = y.detach()
        return y

    def clear_grads(self, mode):
        if mode == "default":
            self.opt.zero_grad()
        else:
            self.opt.zero_grad(set_to_none=(mode == "none"))

    def update(self):
        opt = self.optimizer
        if opt.clip_global_norm is not None or opt.clip_norm is not None:
            # clip only the others: the no_clip ones stay out of the norm and keep their gradient
            params = [p for g in self.opt.param_groups for p in g["params"] if id(p) not in self.no_clip]
            if opt.clip_global_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, opt.clip_global_norm)
            else:
                for p in params:  # clip_grad_norm_ skips a parameter without a gradient
                    torch.nn.utils.clip_grad_norm_(p, opt.clip_norm)
        self.opt.step()

    def _numpy(self, name, tensor):
        return self._oriented(name, tensor.detach().cpu().numpy().astype(np.float64))

    def _oriented(self, name, array):
        return array.T if self._is_linear_weight(name) else array

    def _sharded(self) -> bool:
        return self.run.engine in ("fsdp1", "fsdp2") and self.ddp is not None

    def grads(self):
        # FSDP1's no_sync leaves each rank its own whole gradients
        if self._sharded() and not (self.run.engine == "fsdp1" and self._unsynced):
            return self._gathered(grads=True)
        return {n: None if t.grad is None else self._numpy(n, t.grad) for n, t in self.tensors.items()}

    def values(self):
        if self._sharded():
            return self._gathered(grads=False)
        return {n: self._numpy(n, t) for n, t in self.tensors.items()}

    def trainable(self):
        return {n: isinstance(t, torch.nn.Parameter) and t.requires_grad for n, t in self.tensors.items()}


class _PathForward(torch.nn.Module):
    """What DistributedDataParallel wraps: the net, whose forward takes the step's path beside the input."""

    def __init__(self, net, run_path):
        super().__init__()
        self.net = net
        self.run_path = run_path

    def forward(self, x, path):
        return self.run_path(path, x)
