"""torch's graph mode: what only --mode graph needs.

It compiles the model's forward as torch users do, `torch.compile(model, backend=...)`, and keeps the
rest eager (loss, backward, clipping, `opt.step()`). A step's path varies, so each path gets its own
small model (the user's model, read the way it holds its layers), compiled with fullgraph=True: a
graph break or dynamo's recompile limit raises instead of quietly running eager. `opt.step()` stays
eager: the compiled-optimizer recipe is a beta GPU-speed one, and torch breaks the graph inside every
step on purpose (pytorch/pytorch#104053), so it cannot compile with fullgraph=True.
Freezing between steps flips requires_grad, which dynamo guards on: the path's next call recompiles
(still fullgraph=True, within the recompile limit), so the new graph computes no gradient for the
frozen layer. torch 2.11 misses an unfreeze there (known.yaml: compiled-keeps-first-frozen). Learning-rate changes and clipping touch only the eager optimizer code.

Here: the checks and the run's inductor cache folder (start), how the
model reaches each layer (routes), and the compiled model of each path (CompiledPaths).
"""
from __future__ import annotations

import functools
import multiprocessing
import os
import shutil
import stat
import tempfile
from pathlib import Path

import torch

from ..base import Unavailable

def start(backend: str, device: torch.device):
    """Refuse what would make torch.compile quietly run eager code; give inductor a folder of this
    run; then warm the compiler up. The first compile of a process pays for dynamo's and the
    backend's own start (inductor's C++ toolchain: tens of seconds on a loaded 2-core machine): that
    is paid here, while the worker starts (under its start-up limit), not by the first case's limit."""
    if torch._dynamo.config.disable or torch._dynamo.config.suppress_errors:
        raise Unavailable("--mode graph: TORCH_COMPILE_DISABLE or TORCHDYNAMO_SUPPRESS_ERRORS is set, "
                          "so torch.compile may run eager code")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = _fresh_cache_dir()
    layer = torch.nn.Linear(2, 2).to(device)
    torch.compile(layer, backend=backend, fullgraph=True)(torch.ones(3, 2, device=device)).sum().backward()
    torch._dynamo.reset()  # the warm-up's graph is no case's


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


@functools.cache
def _fresh_cache_dir() -> str:
    """The run's folder for inductor's on-disk caches (compiled kernels, FX graphs; by default one
    folder per user, reused by every later process): graphs may be shared within a run, never across
    runs. One folder for the whole run, so that a worker started after another was killed (a per-case
    timeout, a crash) reuses what its predecessors compiled. A worker is a child of the run's process
    (engine/worker.py spawns it), so the folder is named by that process (by this one where it runs the
    cases itself): its id and start time (a reused id is another run). In a worker, tempfile's folder is
    the run's own, which the run removes at its end; where the cases run in this process (repro, tests),
    a later run removes the folders of runs that are gone (and the per-worker folders of earlier
    versions). The name is predictable: a folder this user does not own alone is refused, since
    inductor loads code from it."""
    prefix = "conformance-torchinductor-"
    for old in Path(tempfile.gettempdir()).glob(prefix + "*-*"):
        rest = old.name[len(prefix):]
        pid, _, started = rest.removeprefix("run-").partition("-")
        if pid.isdigit() and (not _alive(int(pid)) or rest.startswith("run-") and started != _started(int(pid))):
            shutil.rmtree(old, ignore_errors=True)
    parent = multiprocessing.parent_process()  # None in a process that runs cases itself (repro, tests)
    run = parent.pid if parent is not None else os.getpid()
    folder = Path(tempfile.gettempdir()) / f"{prefix}run-{run}-{_started(run)}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass  # an earlier worker of this run made it
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise Unavailable(f"--mode graph: {folder} is not a private folder of this user; inductor would load code from it")
    return str(folder)


def _started(pid: int) -> str:
    """The process's start time (clock ticks after boot, Linux /proc), or "" where unknown."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


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
