"""PaddlePaddle adapter: the code a Paddle 3 user writes in dygraph, the hand-written loop (eager / loop):
    loss = ((model(x) - t) ** 2).mean(); loss.backward(); opt.step(); opt.clear_grad()
the same loop with the step's forward and loss in `paddle.jit.to_static(layer)` (--mode graph, backend
"to_static": graph.py's ToStatic), and hapi's `paddle.Model` (--api trainer: trainer.py's HapiTrainer).
The static-graph Program run by an Executor (backend "static") is an adapter of its own, graph.py's
StaticRunner; common.py holds what the two share (the layers, the optimizer, the loss, the defaults read
back, the device).

"Default" clearing is plain `opt.clear_grad()`, whatever its default is in the installed version
(Paddle 3: set_to_zero=True). Freezing a parameter is `param.stop_gradient = True`; `param.trainable`
is the same flag seen from the other side (its setter sets stop_gradient = not trainable). Freezing a
layer is `layer.requires_grad_(False)` (Paddle 3; 2.6 has no layer-level switch: the loop it runs, over
layer.parameters(), is written out). Excluding from decay by name: AdamW's apply_decay_param_fun is the
user's filter (on the name Paddle hands it); the other optimizers take no such function, so the filter
builds parameter groups from named_parameters().
"""
from __future__ import annotations

import functools
import sys

import numpy as np

from ..base import RankGroup, Unavailable, loaded
from ...spec import Optimizer, param_names
from .common import ROLES, PaddleBase, loss_of, make_layers, new_optimizer, paddle, read_defaults, run_path
from .graph import ToStatic
from .trainer import HapiTrainer


def paddle_launch(world: int, script: str, nodes: int = 1, node: int = 0, master: str = "") -> list[str]:
    """paddle.distributed.launch on this host: it picks a free localhost port for its store, and writes each
    rank's log under ./log (the rank group's temporary folder). On several nodes: --nnodes, this node's --rank
    and the --master (node 0's store) every node meets at."""
    if nodes == 1:
        return [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", str(world), script]
    return [sys.executable, "-m", "paddle.distributed.launch", "--nnodes", str(nodes), "--rank", str(node),
            "--master", master, "--nproc_per_node", str(world // nodes), script]


class PaddleRunner(ToStatic, HapiTrainer, PaddleBase):
    """The dygraph loop: eager, its step paths compiled by to_static (ToStatic), or in hapi's Model (HapiTrainer)."""
    parallelism = RankGroup(launch=paddle_launch)  # paddle.DataParallel (or hapi's), a process per rank

    def __init__(self, run=None, **axes):
        super().__init__(run, **axes)
        if self.backend == "static":  # the room's ADAPTERS names the static program's own class
            raise Unavailable("--backend static is graph.py's StaticRunner, not PaddleRunner (the room's ADAPTERS)")
        if self.run.replicas != "1":  # one rank: paddle.distributed.launch's environment says where the group meets
            paddle.distributed.init_parallel_env()
            self.rank = paddle.distributed.get_rank()
        self.parallel = None

    # ------------------------------------------------------------ the model, as the user builds it
    def build(self, model, values):
        paddle.seed(0)
        self.model = model
        self.layers, self.net = make_layers(model)
        self.tensors = {name: getattr(self.layers[name.split(".")[0]], ROLES[name.split(".")[1]])
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
        if optimizer.no_decay_ndim_below is not None:  # the users' `p.ndim < 2`, over named_parameters()
            no_decay |= {p.name for p in self.net.parameters() if p.ndim < optimizer.no_decay_ndim_below}
        self.opt = new_optimizer(optimizer, params, no_decay)

    def optimizer_params(self):
        held = [p for group in self.opt._param_groups
                for p in (group["params"] if isinstance(group, dict) else [group])]
        return [self.names.get(id(p), "<unnamed tensor>") for p in held]

    # ------------------------------------------------------------ settings, freezing, learning rate
    def defaults(self):
        return read_defaults(self.model, self.optimizer, self.layers, self.opt)

    def set_trainable(self, names, trainable):
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
        self.opt.set_lr(lr)

    # ------------------------------------------------------------ one step
    def _run_path(self, path, x):
        return run_path(self.model, self.layers, path, x)

    def forward(self, path, x, target, train, backward, reduce=True, loss=None, touch=(), sync=True):
        if not sync:  # forward and backward under DataParallel's no_sync: this rank accumulates its own gradients
            with self.parallel.no_sync():
                return self.forward(path, x, target, train, backward, reduce, loss, touch)
        if self.api == "trainer":
            return self._trainer_forward(path, x, target, train, loss)
        model = self.parallel or self.net
        if train:
            model.train()  # reaches only registered sublayers, as in user code
        else:
            model.eval()
        y, t = paddle.to_tensor(x), paddle.to_tensor(target)
        if self.mode == "graph":  # the compiled step computes the loss (graph.py), inside DataParallel if any
            value = self._compiled_step(path, y, t, reduce, loss)
        else:
            if self.parallel is not None:  # through DataParallel, which the net's forward runs the step's path for
                self.net.run_path = functools.partial(self._run_path, path)
                y = self.parallel(y)
            else:
                y = self._run_path(path, y)
            value = loss_of(y, t, reduce, loss)
        # the unused-parameter workaround: loss + 0 * p.sum(), in dygraph in both modes: in a converted function SOT
        # does not compile it (Paddle 3 breaks the graph at Layer.parameters(); 2.6 runs the whole step as dygraph)
        for name in touch:
            value = value + 0 * sum(p.sum() for p in self.layers[name].parameters())
        if backward:
            value.backward()
        return float(value.mean().item())

    def clear_grads(self, mode):
        if mode == "default":
            self.opt.clear_grad()
        else:
            self.opt.clear_grad(set_to_zero=(mode == "zeros"))

    def update(self):
        self.opt.step()  # global-norm clipping, if any, is the optimizer's grad_clip

    # ------------------------------------------------------------ reading back
    def grads(self):
        return {n: None if n in self.absent or self.tensors[n].grad is None
                else self.tensors[n].grad.numpy().astype(np.float64) for n in param_names(self.model)}

    def values(self):
        return {n: self.absent[n] if n in self.absent else self.tensors[n].numpy().astype(np.float64)
                for n in param_names(self.model)}

    def trainable(self):
        return {n: n not in self.absent and bool(self.tensors[n].trainable) for n in param_names(self.model)}
