"""torch's graph mode: what only --mode graph needs.

It compiles the model's forward as torch users do, `torch.compile(model, backend=...)`, and keeps the
rest eager (loss, backward, clipping, `opt.step()`). A step's path varies, so each path gets its own
small model (the user's model, read the way it holds its layers), compiled with fullgraph=True: a
graph break or dynamo's recompile limit raises instead of quietly running eager. `opt.step()` stays
eager: the compiled-optimizer recipe is a beta GPU-speed one, and torch breaks the graph inside every
step on purpose (pytorch/pytorch#104053), so it cannot compile with fullgraph=True.
Freezing between steps flips requires_grad, which dynamo guards on: the path's next call recompiles
(still fullgraph=True, within the recompile limit), so the new graph computes no gradient for the
frozen layer. Learning-rate changes and clipping touch only the eager optimizer code.

Here: the backends offered, the checks and inductor cache folder made once per run (start), how the
model reaches each layer (routes), and the compiled model of each path (CompiledPaths).
"""
from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

import torch

from ..base import Unavailable

# aot_eager: dynamo + AOTAutograd (where compiled gradient semantics live), graphs run by eager
# kernels; inductor: the default backend, which also generates C++ (CPU) / Triton (CUDA) code
BACKENDS = ("aot_eager", "inductor")


def start():
    """Refuse what would make torch.compile quietly run eager code; give inductor a folder of this run."""
    if torch._dynamo.config.disable or torch._dynamo.config.suppress_errors:
        raise Unavailable("--mode graph: TORCH_COMPILE_DISABLE or TORCHDYNAMO_SUPPRESS_ERRORS is set, "
                          "so torch.compile may run eager code")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = _fresh_cache_dir()


def routes(model, attributes, container):
    """How the model's forward reaches each layer: self.<name> or self.blocks[<index or name>] (the
    attribute runner.py's build stores a container under), and whether it detaches after the layer."""
    route = {name: (name, None) for name in attributes}
    route.update({name: ("blocks", name if isinstance(container, (dict, torch.nn.ModuleDict)) else i)
                  for i, name in enumerate(model.contained) if container is not None})
    return {name: (*where, name in model.detach_after) for name, where in route.items()}


class CompiledPaths(dict):
    """path (a tuple of layer names) -> the user's model along that path, compiled on first use."""

    def __init__(self, net, routes, backend, flatten_before):
        super().__init__()
        # a new case builds new modules: forget the last case's graphs, so that the recompile
        # limit counts this case's recompilations only
        torch._dynamo.reset()
        self.net, self.routes, self.backend, self.flatten_before = net, routes, backend, flatten_before

    def __missing__(self, path):
        flatten = self.flatten_before(path)
        route = tuple((*self.routes[name], i in flatten) for i, name in enumerate(path))
        self[path] = torch.compile(_PathModel(self.net, route), backend=self.backend, fullgraph=True)
        return self[path]


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
    (an attribute, or an item of its container), an image flattened (channels first) before a linear
    layer, detached after where the case says."""

    def __init__(self, net, route):
        super().__init__()
        # route: (attribute, item or None, detach after, flatten before) per layer
        self.net, self.route = net, route

    def forward(self, y):
        for attribute, item, detach, flatten in self.route:
            if flatten:
                y = y.flatten(1)
            layer = getattr(self.net, attribute)
            y = (layer if item is None else layer[item])(y)
            if detach:
                y = y.detach()
        return y
