"""The adapter protocol: the neutral primitives the scenario engine drives.

An adapter translates each primitive into the code a user of its framework writes. It holds no
expectations: it only builds, runs and reports what the framework did.

Names are canonical, `layer.role` (roles: weight, bias, running_mean, running_var); a tied layer's
parameters are reported under the layer it ties to. Arrays are float NumPy arrays in the canonical
layout: a linear layer computes y = x @ weight + bias, so weight has shape (in, out).
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..schema import ClearMode, Model, Optimizer, param_names

DEVICES = ("cpu", "cuda", "ascend")
MODES = ("eager", "graph")
# loop: the hand-written training loop; trainer: the framework's own (Keras fit, paddle.Model, ...)
APIS = ("loop", "trainer")


class Unsupported(Exception):
    """The adapter cannot express this scenario in its framework; the message says why."""


class Unavailable(Exception):
    """The requested device or mode is absent or not offered by this adapter; the message says which."""


class Runner(ABC):
    framework: str = ""
    devices: tuple[str, ...] = ("cpu",)  # what the adapter can target
    modes: tuple[str, ...] = ("eager",)  # execution modes it can run in
    apis: tuple[str, ...] = ("loop",)    # ways of training it can drive
    no_trainer = ""                      # why "trainer" is not among apis, when the framework has none
    backends: tuple[str, ...] = ()       # what may compile the graph (--backend); the first is the default
    features: frozenset[str] = frozenset()  # spec features beyond the core it expresses (schema.FEATURES)
    # set by forward when it drew a random number no other runner shares (the oracle's dropout mask)
    drew_random: bool = False

    def __init__(self, device: str = "cpu", mode: str = "eager", api: str = "loop", backend: str | None = None):
        if device not in self.devices:
            raise Unavailable(f"the {self.framework} adapter offers --device {'/'.join(self.devices)}, not {device}")
        if mode not in self.modes:
            raise Unavailable(f"the {self.framework} adapter offers --mode {'/'.join(self.modes)}, not {mode}")
        if api not in self.apis:
            raise Unavailable(self.no_trainer if api == "trainer" and self.no_trainer else
                              f"the {self.framework} adapter offers --api {'/'.join(self.apis)}, not {api}")
        if backend is not None and (mode != "graph" or backend not in self.backends):
            offered = f"--backend {'/'.join(self.backends)} with --mode graph" if self.backends else "no --backend"
            raise Unavailable(f"the {self.framework} adapter offers {offered}, not {backend} with --mode {mode}")
        self.device, self.mode, self.api = device, mode, api
        # what compiles the graph, shown with the run (the adapter may name it more exactly)
        self.backend = (backend or (self.backends[0] if self.backends else "")) if mode == "graph" else ""

    @staticmethod
    @abstractmethod
    def version() -> str:
        """The framework's version string."""

    @abstractmethod
    def build(self, model: Model, values: dict[str, np.ndarray]) -> None:
        """Build the model as a user of the framework would, load `values`, apply model.frozen."""

    @abstractmethod
    def make_optimizer(self, optimizer: Optimizer) -> None:
        """Create the optimizer over the parameter collection optimizer.params names."""

    @abstractmethod
    def forward(self, path: list[str], x: np.ndarray, target: np.ndarray, train: bool,
                backward: bool) -> float:
        """Run the layers of `path` in order (stop_gradient after model.detach_after layers),
        loss = mean((y - target)**2); back-propagate it when `backward`; return the loss."""

    @abstractmethod
    def clear_grads(self, mode: ClearMode) -> None:
        """Clear gradients the framework's way: its default call, or explicitly to None / zeros."""

    @abstractmethod
    def update(self) -> None:
        """One optimizer step (with global-norm clipping when the optimizer asks for it)."""

    def train_step(self, path: list[str], x: np.ndarray, target: np.ndarray, train: bool) -> float:
        """api "trainer": one step of the framework's own trainer on this batch (it clears, runs
        forward and backward and updates, as the trainer does); the loss it reports for the batch."""
        raise Unsupported(f"the {self.framework} adapter has no trainer step")

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
        (BatchNorm momentum = weight of the new batch; betas a pair)."""
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
