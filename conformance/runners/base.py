"""The adapter protocol: the neutral primitives the scenario engine drives.

An adapter translates each primitive into the code a user of its framework writes. It holds no
expectations: it only builds, runs and reports what the framework did.

Names are canonical, `layer.role` (roles: weight, bias, running_mean, running_var); a tied layer's
parameters are reported under the layer it ties to. Arrays are float NumPy arrays in the canonical
layout: a linear layer computes y = x @ weight + bias, so weight has shape (in, out).
"""
from __future__ import annotations

import re
import socket
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar

import numpy as np

from ..run import AXES, AXIS, Run, takes
from ..spec import ClearMode, CrossEntropy, Instance, Model, Optimizer, param_names, smoke


class Unsupported(Exception):
    """The adapter cannot express this scenario in its framework; the message says why."""


class Unavailable(Exception):
    """The requested run (device, mode, api, backend) is absent or not offered by this room; the message says which."""


@dataclass(frozen=True)
class Offers:
    """What a room offers, declared in its __init__.py (which imports nothing of its framework):
    the devices it can target, and the runs it executes on each, as the values of the axes besides
    framework, version and device (an absent axis takes its default). In graph mode, a room's first
    backend is its default. `refused` says why the room has no run with some axis value, where the
    framework has no such thing ("api=trainer": torch has no trainer of its own). `smoke`: those of `runs` that
    execute only the spec's smoke subset (spec.smoke: the seeds and one case per topic) unless a selection is
    asked, where the room's main run is another; `smoke_why` says why."""
    devices: tuple[str, ...]
    runs: tuple[dict[str, str], ...]
    refused: dict[str, str] = field(default_factory=dict)
    smoke: tuple[dict[str, str], ...] = ()
    smoke_why: str = ""

    def every_run(self, framework: str, device: str = "cpu") -> list[Run]:
        return [Run(framework, device=device, **axes) for axes in self.runs]

    def is_smoke(self, run: Run) -> bool:
        return run.replace(version="") in [Run(run.framework, device=run.device, **axes) for axes in self.smoke]

    def instances(self, run: Run, spec: list[Instance]) -> list[Instance]:
        """What `run` executes of the spec when no selection is asked: the cases of its replicas (run.takes),
        and of those only the smoke subset in a smoke run."""
        ours = [inst for inst in spec if takes(run, inst.case)]
        return smoke(ours) if self.is_smoke(run) else ours

    def resolve(self, run: Run) -> Run:
        """The run as this room executes it (its default backend filled in), or Unavailable."""
        if run.device not in self.devices:
            raise Unavailable(f"the {run.framework} room offers --device {'/'.join(self.devices)}, not {run.device}")
        if run.mode == "graph" and not run.backend:
            run = run.replace(backend=next((r.get("backend", "") for r in self.runs if r.get("mode") == "graph"), ""))
        if run.replace(version="") in self.every_run(run.framework, run.device):
            return run
        for axis in AXES:
            why = self.refused.get(f"{axis.name}={getattr(run, axis.name)}")
            if why:
                raise Unavailable(why)
        offered = ", ".join(r.execution for r in self.every_run(run.framework))
        raise Unavailable(f"the {run.framework} room offers the runs {offered}; not {run.execution}")


# ---------------------------------------------------------------- data parallelism, as a room declares it
def _never() -> bool:
    return False


@dataclass(frozen=True)
class RankGroup:
    """Data parallelism on an engine that runs one process per rank (torch's DDP under torchrun, paddle's launch,
    msrun). `launch(world, script, nodes=1, node=0, master="")` is the argv of the framework's own launcher that
    starts `world` ranks, each running `script`; with nodes > 1, node `node`'s world // nodes of them, meeting the
    other nodes at `master` (host:port, where node 0's launcher listens). Each rank's runner joins the framework's
    process group in its constructor (its `rank`), wraps the model with the engine in `build`, and observes its own
    rows of every step; the run's worker merges the ranks' observations (engine/ranks.py). `not_a_rank()`, in a
    process the launcher starts: True where it is the launcher's own (msrun's scheduler runs the script too), which
    constructs the runner (joining the cluster serves it) and ends."""
    launch: Callable[..., list[str]]
    not_a_rank: Callable[[], bool] = _never
    # each rank reads the gradient the engine combined in backward, as its user does
    grads_readable: ClassVar[bool] = True

    def launcher(self, nodes: int) -> RankGroup:
        """What starts a run's processes on `nodes` nodes: this launcher, on one node or several."""
        return self


@dataclass(frozen=True)
class InProcess:
    """Data parallelism driven from one process (TF's MirroredStrategy, the oracle): the runner runs every replica
    of a step itself, `forward_replicas`, and says what the replicas' copies hold different values of,
    `disagreeing`. `grads_readable` False where the gradient a step applies exists only inside the framework's
    update (a distribution strategy combines the replicas' gradients in apply_gradients): the gradient checks are
    then unobserved, never failed. `nodes`: how --nodes is served, a launcher that starts each node's processes,
    each still driving its replicas itself (TF's workers, one replica each); None where there is no --nodes.
    `any_replicas`: the runner draws as many replicas as each case asks, whatever its run's --replicas (the
    oracle)."""
    grads_readable: bool = True
    nodes: RankGroup | None = None
    any_replicas: bool = False

    def launcher(self, nodes: int) -> RankGroup | None:
        """What starts a run's processes on `nodes` nodes: none on one (the run's worker drives every replica),
        the `nodes` launcher on several."""
        return self.nodes if nodes > 1 else None


class Runner(ABC):
    framework: str = ""
    offers: Offers = Offers(devices=("cpu",), runs=({},))  # its room's OFFERS
    features: frozenset[str] = frozenset()  # spec features beyond the core it expresses (spec.FEATURES)
    # True where the room's users write the loss, the gradients and the optimizer's update as one function (a
    # tf.function train step): forward is then told that the step's update follows (update=True), and may apply it
    # there, leaving update() nothing to do
    fuses_update: bool = False
    # set by forward when it drew a random number no other runner shares (the oracle's dropout mask)
    drew_random: bool = False
    # how the room runs a data-parallel case (a RankGroup or InProcess, above); None: it has no data parallelism
    parallelism: RankGroup | InProcess | None = None
    # Not the room's but this runner's, so not in its declaration: its rank in the framework's process group (set
    # by the constructor where the runner joins one), and the case's data_parallel settings (set by observe before
    # build: find_unused is the engine's wrapper's argument)
    rank: int = 0
    data_parallel = None

    def __init__(self, run: Run | None = None, **axes):
        """Runner(run), or Runner(mode="graph", ...) for a run of this framework with those axes;
        Unavailable when the room does not offer it."""
        unknown = [name for name in axes if name not in AXIS or name == "framework"]
        if unknown:
            raise TypeError(f"unknown run axis {unknown[0]!r}")
        self.run = self.offers.resolve(run or Run(self.framework, **{k: v or "" for k, v in axes.items()}))

    device = property(lambda self: self.run.device)
    mode = property(lambda self: self.run.mode)
    api = property(lambda self: self.run.api)
    # what compiles the graph in graph mode ("" in eager), shown with the run
    backend = property(lambda self: self.run.backend)

    @staticmethod
    @abstractmethod
    def version() -> str:
        """The framework's version string."""

    def accelerator(self) -> str:
        """The accelerator this run computes on, in one line (its name, driver, toolkit), recorded
        with the run's environment; "" on the cpu."""
        return ""

    def packages(self) -> dict[str, str]:
        """The versions of the packages beside the framework that the room's code uses (Keras for
        TensorFlow, flax and optax for JAX), recorded with the run's environment: many of a room's
        variants belong to them, while a run's version axis is the framework's."""
        return {}

    @abstractmethod
    def build(self, model: Model, values: dict[str, np.ndarray]) -> None:
        """Build the model as a user of the framework would, load `values`, apply model.frozen."""

    @abstractmethod
    def make_optimizer(self, optimizer: Optimizer) -> None:
        """Create the optimizer over the parameter collection optimizer.params names."""

    @abstractmethod
    def forward(self, path: list[str], x: np.ndarray, target: np.ndarray, train: bool,
                backward: bool, reduce: bool = True, loss: CrossEntropy | None = None) -> float:
        """Run the layers of `path` in order (stop_gradient after model.detach_after layers),
        loss = mean((y - target)**2); back-propagate it when `backward`; return the loss. With
        `reduce` False (only for a room whose features hold "per-sample-loss") the loss is each
        sample's mean squared error, a vector, back-propagated as it is; the mean of it is returned.
        With `loss` (only for a room whose features hold "cross-entropy") the loss is that cross-entropy
        of y, class scores, against `target`, int64 labels, built with the framework's own loss object;
        its settings left to "default" left out of the constructor. `update` (only for a runner whose
        fuses_update is set): update() follows this step's backward pass."""

    @abstractmethod
    def clear_grads(self, mode: ClearMode) -> None:
        """Clear gradients the framework's way: its default call, or explicitly to None / zeros."""

    @abstractmethod
    def update(self) -> None:
        """One optimizer step (with global-norm clipping when the optimizer asks for it)."""

    def train_step(self, path: list[str], x: np.ndarray, target: np.ndarray, train: bool,
                   loss: CrossEntropy | None = None) -> float:
        """api "trainer": one step of the framework's own trainer on this batch (it clears, runs
        forward and backward and updates, as the trainer does); the loss it reports for the batch.
        `loss`: as forward's, the loss the trainer is given."""
        raise Unsupported(f"the {self.framework} adapter has no trainer step")

    def forward_replicas(self, shards: list[tuple[list[str], range]], x: np.ndarray, target: np.ndarray, train: bool,
                         backward: bool, loss: CrossEntropy | None = None, touch=()) -> float:
        """parallelism InProcess: one data-parallel step of every replica, as forward's: `shards` is each replica's
        (path, rows of the global batch x), in rank order; the framework combines the replicas' gradients as its
        engine does. Returns the global batch's loss (spec.replica_loss_weights)."""
        raise Unsupported(f"the {self.framework} adapter drives no replicas itself")

    def disagreeing(self) -> set[str]:
        """parallelism InProcess, after a data-parallel step: the canonical names whose copies on the replicas hold
        different values."""
        raise Unsupported(f"the {self.framework} adapter drives no replicas itself")

    @abstractmethod
    def grads(self) -> dict[str, np.ndarray | None]:
        """Current gradient of every canonical parameter; None where the framework has none."""

    @abstractmethod
    def values(self) -> dict[str, np.ndarray]:
        """Current value of every canonical parameter and statistic."""

    @abstractmethod
    def trainable(self) -> dict[str, bool]:
        """Whether the framework regards each canonical parameter as trainable."""

    @abstractmethod
    def optimizer_params(self) -> list[str]:
        """Canonical names of what the optimizer holds, once per time it holds it."""

    def defaults(self) -> dict[str, object]:
        """Feature "defaults": for each setting the case left to the framework (schema.defaults_of),
        the value its constructor chose, read from the built objects, in the spec's convention
        (BatchNorm momentum = weight of the new batch; betas a pair; `<layer>.bias`, whether the built
        layer holds a bias). Feature "positional-args": `<layer>.rate`, the fraction of DROPOUT_PROBE
        ones the built dropout layer zeroes in train mode (measured, never read from an attribute).
        A layer whose default left its bias out reads as a zero bias (values) with no gradient (None)."""
        raise Unsupported(f"the {self.framework} adapter does not read its defaults")

    def set_trainable(self, names: list[str], trainable: bool) -> None:
        """Feature "freeze-steps": mark layers (the framework's layer-level switch) or parameters
        trainable or not, after the optimizer exists, as a fine-tuning schedule does."""
        raise Unsupported(f"the {self.framework} adapter cannot freeze between steps")

    def set_lr(self, lr: float) -> None:
        """Feature "lr-schedule": the optimizer's learning rate from the next update on."""
        raise Unsupported(f"the {self.framework} adapter cannot change the learning rate")

    def decayed(self) -> dict[str, bool] | None:
        """Read after the last step: for every canonical parameter, whether the update program the
        framework built applies weight decay to it (a regularization op, or decay fused into the
        update op). None where the run builds no program to read (eager code): the checks are then
        listed as not observed."""
        return None


# ---------------------------------------------------------------- helpers shared by adapters
def nvidia_driver() -> str:
    """The NVIDIA kernel driver's version, as the driver states it; "unknown" where it cannot be read."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text(errors="replace")
    except OSError:
        return "unknown"
    found = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d[\w.]*)", text)
    return found.group(1) if found else "unknown"


def build_layers(model: Model, make) -> dict[str, object]:
    """Every layer object, made once by `make(name, spec)`; a tied layer's name maps to the same object."""
    layers = {name: make(name, spec) for name, spec in model.layers.items() if not spec.tie}
    layers.update({name: layers[spec.tie] for name, spec in model.layers.items() if spec.tie})
    return layers


def hold(model: Model, layers: dict, framework_list, framework_dict) -> tuple[dict, object]:
    """Split the layers as model.container says: (layers that are plain attributes, by name; the
    container holding model.contained, or None). framework_list / framework_dict are the framework's
    container classes, taking a list / a dict of layers (None where the framework has none)."""
    if model.container == "attributes" or not model.contained:
        return dict(layers), None
    make = {"framework_list": framework_list, "plain_list": list, "plain_tuple": tuple,
            "framework_dict": framework_dict, "plain_dict": dict}[model.container]
    if make is None:
        raise Unsupported(f"no framework container for {model.container}")
    held = {name: layers[name] for name in model.contained}
    container = make(held) if model.container.endswith("dict") else make(list(held.values()))
    return {n: layer for n, layer in layers.items() if n not in held}, container


def frozen_params(model: Model) -> set[str]:
    """Canonical names of the parameters model.frozen marks (a layer name freezes all of its own)."""
    names = param_names(model)
    return {p for p in names for f in model.frozen if p == f or p.startswith(f + ".")}


def given_loss(loss: CrossEntropy) -> dict:
    """The cross-entropy settings a case writes out, by the spec's names (reduction, from_logits, ignore_index,
    label_smoothing): those left to "default" are left out, and so is an ignore_index of None (no sample
    carries an ignored label: the framework's default stays in place)."""
    return {k: v for k, v in loss.model_dump().items() if v is not None and v != "default"}


def loaded(model: Model, values: dict) -> dict:
    """The case's values an adapter loads into the built layers: all but those of `init: default` layers,
    whose parameters keep the framework's own draw."""
    return {n: v for n, v in values.items() if model.layers[n.split(".")[0]].init == "case"}


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port of `host` (this machine's) free now, for a launcher that needs one named (it binds it soon after)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
