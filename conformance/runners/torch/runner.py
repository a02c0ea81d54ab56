"""PyTorch adapter: the code a torch user writes.

    opt.zero_grad(); loss = ((model(x) - t) ** 2).mean(); loss.backward(); opt.step()

"Default" clearing is plain `opt.zero_grad()`, whatever its default is in the installed version.

Here: the adapter class (model, optimizer, the loop's primitives, the observations). --mode graph
compiles each path's forward with graph.py; trainer.py says why there is no --api trainer.
"""
from __future__ import annotations

import numpy as np
import torch

from . import graph, trainer
from ..base import Runner, Unavailable, build_layers, frozen_params, hold
from ...schema import Model, Optimizer, param_names


class TorchRunner(Runner):
    framework = "torch"
    devices = ("cpu", "cuda")
    modes = ("eager", "graph")
    apis = ("loop",)
    no_trainer = trainer.NO_TRAINER
    backends = graph.BACKENDS

    def __init__(self, device: str = "cpu", mode: str = "eager", api: str = "loop", backend: str | None = None):
        super().__init__(device, mode, api, backend)
        if mode == "graph":
            graph.start()
        if device == "cuda" and not torch.cuda.is_available():
            raise Unavailable(f"--device cuda: torch {torch.__version__} sees no CUDA device "
                              f"(torch.cuda.is_available() is False)")
        self.torch_device = torch.device(device)

    @staticmethod
    def version() -> str:
        return str(torch.__version__)  # a str subclass whose unpickling imports torch

    def build(self, model: Model, values):
        torch.manual_seed(0)
        self.model = model
        def make(name, spec):
            if spec.linear:
                return torch.nn.Linear(*spec.linear, bias=spec.bias)
            return torch.nn.BatchNorm1d(spec.batchnorm, eps=spec.eps, momentum=spec.momentum)

        self.layers = layers = build_layers(model, make)  # a tie is the same module object
        attributes, container = hold(model, layers, torch.nn.ModuleList, torch.nn.ModuleDict)
        net = torch.nn.Module()
        for name, layer in attributes.items():
            setattr(net, name, layer)
        if container is not None:
            net.blocks = container  # nn.Module.__setattr__ registers only torch containers
        self.net = net.to(self.torch_device)
        if self.mode == "graph":
            self.compiled = graph.CompiledPaths(self.net, graph.routes(model, attributes, container), self.backend)
        for layer in layers.values():
            layer.to(self.torch_device)  # layers the net does not know about must move too
        self.tensors = {name: getattr(layers[name.split(".")[0]], name.split(".")[1])
                        for name in param_names(model)}
        with torch.no_grad():
            for name, tensor in self.tensors.items():
                tensor.copy_(torch.as_tensor(self._to_torch(name, values[name])))
        for name in frozen_params(model):
            self.tensors[name].requires_grad_(False)
        self.names = {id(t): n for n, t in self.tensors.items()}

    def _to_torch(self, name, array):
        return np.ascontiguousarray(array.T) if self._is_linear_weight(name) else array

    def _is_linear_weight(self, name):
        layer, role = name.split(".")
        return role == "weight" and self.model.layers[layer].linear is not None

    def make_optimizer(self, optimizer: Optimizer):
        if optimizer.params == "default":
            params = list(self.net.parameters())
        elif optimizer.params == "all":
            params = list(self.net.parameters()) + list(self.net.buffers())
        else:
            params = [self.tensors[n] for n in optimizer.params]
        special = [p for p in params if self.names.get(id(p)) in optimizer.regularizers]
        groups = [{"params": [p for p in params if all(p is not s for s in special)]}]
        groups += [{"params": [p], "weight_decay": optimizer.regularizers[self.names[id(p)]]} for p in special]
        groups = [g for g in groups if g["params"]]
        kw = dict(lr=optimizer.lr, weight_decay=optimizer.weight_decay)
        if optimizer.name == "sgd":
            self.opt = torch.optim.SGD(groups, **kw)
        elif optimizer.name == "momentum":
            self.opt = torch.optim.SGD(groups, momentum=optimizer.momentum, **kw)
        else:
            cls = torch.optim.Adam if optimizer.name == "adam" else torch.optim.AdamW
            self.opt = cls(groups, betas=optimizer.betas, eps=optimizer.eps, **kw)
        self.clip = optimizer.clip_global_norm

    def optimizer_params(self):
        return [self.names.get(id(p), "<unnamed tensor>") for g in self.opt.param_groups for p in g["params"]]

    def forward(self, path, x, target, train, backward):
        self.net.train(train)  # reaches only registered submodules, as in user code
        x = torch.as_tensor(x, device=self.torch_device)
        if self.mode == "graph":
            y = self.compiled[tuple(path)](x)
        else:
            y = x
            for name in path:
                y = self.layers[name](y)
                if name in self.model.detach_after:
                    y = y.detach()
        loss = ((y - torch.as_tensor(target, device=self.torch_device)) ** 2).mean()
        if backward:
            loss.backward()
        return float(loss.item())

    def clear_grads(self, mode):
        if mode == "default":
            self.opt.zero_grad()
        else:
            self.opt.zero_grad(set_to_none=(mode == "none"))

    def update(self):
        if self.clip is not None:
            params = [p for g in self.opt.param_groups for p in g["params"]]
            torch.nn.utils.clip_grad_norm_(params, self.clip)
        self.opt.step()

    def _numpy(self, name, tensor):
        array = tensor.detach().cpu().numpy().astype(np.float64)
        return array.T if self._is_linear_weight(name) else array

    def grads(self):
        return {n: None if t.grad is None else self._numpy(n, t.grad) for n, t in self.tensors.items()}

    def values(self):
        return {n: self._numpy(n, t) for n, t in self.tensors.items()}

    def trainable(self):
        return {n: isinstance(t, torch.nn.Parameter) and t.requires_grad for n, t in self.tensors.items()}

