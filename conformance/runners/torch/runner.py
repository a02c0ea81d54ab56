"""PyTorch adapter: the code a torch user writes.

    opt.zero_grad(); loss = ((model(x) - t) ** 2).mean(); loss.backward(); opt.step()

"Default" clearing is plain `opt.zero_grad()`, whatever its default is in the installed version.

--mode graph compiles the model's forward as torch users do, `torch.compile(model, backend=...)`,
and keeps the rest eager (loss, backward, clipping, `opt.step()`). A step's path varies, so each path
gets its own small model (the user's model, read the way it holds its layers), compiled with
fullgraph=True: a graph break or dynamo's recompile limit raises instead of quietly running eager.
`opt.step()` stays eager: the compiled-optimizer recipe is a beta GPU-speed one, and torch breaks the
graph inside every step on purpose (pytorch/pytorch#104053), so it cannot compile with fullgraph=True.
torch has no trainer of its own: the hand-written loop above is the only api.
"""
from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from ..base import Runner, Unavailable, build_layers, frozen_params, hold
from ...schema import Model, Optimizer, param_names


class TorchRunner(Runner):
    framework = "torch"
    devices = ("cpu", "cuda")
    modes = ("eager", "graph")
    apis = ("loop",)
    no_trainer = ("torch has no trainer of its own (its users write the training loop; Lightning and "
                  "others are separate projects): run it with --api loop")
    # aot_eager: dynamo + AOTAutograd (where compiled gradient semantics live), graphs run by eager
    # kernels; inductor: the default backend, which also generates C++ (CPU) / Triton (CUDA) code
    backends = ("aot_eager", "inductor")

    def __init__(self, device: str = "cpu", mode: str = "eager", api: str = "loop", backend: str | None = None):
        super().__init__(device, mode, api, backend)
        if mode == "graph":
            # these would make torch.compile quietly run eager code
            if torch._dynamo.config.disable or torch._dynamo.config.suppress_errors:
                raise Unavailable("--mode graph: TORCH_COMPILE_DISABLE or TORCHDYNAMO_SUPPRESS_ERRORS is set, "
                                  "so torch.compile may run eager code")
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = _fresh_cache_dir()
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
        self.compiled = {}  # path -> its compiled model
        if self.mode == "graph":
            # a new case builds new modules: forget the last case's graphs, so that the recompile
            # limit counts this case's recompilations only
            torch._dynamo.reset()
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
        # how the model's forward reaches each layer: self.<name> or self.blocks[<index or name>]
        self.route = {name: (name, None) for name in attributes}
        self.route.update({name: ("blocks", name if isinstance(container, (dict, torch.nn.ModuleDict)) else i)
                           for i, name in enumerate(model.contained) if container is not None})
        self.net = net.to(self.torch_device)
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
            y = self._compiled(path)(x)
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

    def _compiled(self, path):
        key = tuple(path)
        if key not in self.compiled:
            route = tuple((*self.route[name], name in self.model.detach_after) for name in path)
            self.compiled[key] = torch.compile(_PathModel(self.net, route), backend=self.backend, fullgraph=True)
        return self.compiled[key]

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


@functools.cache  # one per process: the worker is one run
def _fresh_cache_dir() -> str:
    """A new folder for inductor's on-disk caches (compiled kernels, FX graphs; by default one folder
    per user, reused by every later process): graphs may be shared within a run, never across runs.
    The worker is killed, not closed, so each folder is named by its process and removed by a later
    run once that process is gone."""
    prefix = "conformance-torchinductor-"
    for old in Path(tempfile.gettempdir()).glob(prefix + "*-*"):
        pid = old.name[len(prefix):].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process
    return True


class _PathModel(torch.nn.Module):
    """The user's model with a forward along one path: each layer read the way the model holds it
    (an attribute, or an item of its container), detached after where the case says."""

    def __init__(self, net, route):
        super().__init__()
        self.net, self.route = net, route  # route: (attribute, item or None, detach after) per layer

    def forward(self, y):
        for attribute, item, detach in self.route:
            layer = getattr(self.net, attribute)
            y = (layer if item is None else layer[item])(y)
            if detach:
                y = y.detach()
        return y
