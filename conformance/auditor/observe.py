"""What an audit observes of a user's model, optimizer and step, framework-neutrally.

A room's probe (runners/<fw>/audit.py, a `Probe`) reads the framework: what the model registers and
what its plain containers hold (`inventory`), every parameter's and statistic's value (`values`), and,
hooked into the optimizer's update, each gradient as the update receives it and each layer's mode
then (`take_updates`). `observe` runs the user's step N times between those reads and compares
values exactly (never allclose: a decayed unused head moves by 1e-6 a step).

The models here cross a process boundary (the CLI runs the user's code in a child): they are
validated where they arrive.
"""
from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from typing import Callable, Iterator, Literal, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

MAX_NAME = 400     # characters of a parameter name or layer path
MAX_ITEMS = 200_000  # parameters or layers of one model


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Param(_Strict):
    """A parameter or running statistic the model holds, registered or reachable only through plain
    Python containers on its attributes (then named by that attribute path)."""
    name: str = Field(max_length=MAX_NAME)
    layer: str = Field(max_length=MAX_NAME)  # the layer holding it ("" for the model itself)
    layer_type: str = Field(max_length=MAX_NAME)
    size: int = Field(ge=0)
    trainable: bool        # the framework's own flag (requires_grad, not stop_gradient, trainable)
    statistic: bool        # running statistics (BatchNorm moving mean and variance)
    registered: bool
    in_optimizer: bool
    decayed: Optional[bool] = None  # whether the optimizer's weight decay applies to it (None: unknown)


class Layer(_Strict):
    path: str = Field(max_length=MAX_NAME)
    type: str = Field(max_length=MAX_NAME)
    registered: bool


class DecaySetting(_Strict):
    """An optimizer setting that exempts parameters from weight decay, and what it exempts here."""
    setting: str = Field(max_length=2000)          # as the user wrote it, e.g. exclude_from_weight_decay(var_names=[...])
    names: list[str] = Field(max_length=10_000)    # the names or patterns it gives
    excludes: list[str] = Field(max_length=MAX_ITEMS)  # the parameters it exempts in this model
    unmatched: list[str] = Field(default_factory=list, max_length=10_000)  # its names that exempt nothing


class Inventory(_Strict):
    framework: str = Field(max_length=40)
    version: str = Field(max_length=64)
    model_type: str = Field(max_length=MAX_NAME)
    params: list[Param] = Field(max_length=MAX_ITEMS)
    layers: list[Layer] = Field(max_length=MAX_ITEMS)
    decay_settings: list[DecaySetting] = Field(default_factory=list, max_length=100)
    has_modes: bool  # whether layers have a train/eval mode (Keras layers take `training` per call)


Grad = Literal["none", "zero", "nonzero", "unread"]


class ParamStep(_Strict):
    grad: Grad                      # at the update; unread: the update does not see this parameter
    grad_norm: Optional[float] = None
    moved: bool                     # any element changed, compared exactly
    change: float = 0.0             # largest absolute change of an element (0 where the gradient was nonzero)
    was_zero: bool                  # every element was exactly 0 before the step (False where the gradient was nonzero)


class StepObservation(_Strict):
    step: int = Field(ge=0)
    updates: int = Field(ge=0)      # how many times the optimizer's update ran in the step
    model_training: Optional[bool] = None        # the model's mode at the (first) update
    modes: dict[str, bool] = Field(default_factory=dict, max_length=MAX_ITEMS)  # layer path -> training, at the update
    params: dict[str, ParamStep] = Field(max_length=MAX_ITEMS)
    seconds: float = Field(ge=0)


class AuditInputError(Exception):
    """What the user handed over cannot be audited (a model of another framework, an optimizer that
    is not one, an update the probe cannot read): one line saying what and where."""


class Probe(ABC):
    """A room's view of one user's model and optimizer. The constructor checks they are the
    framework's own (AuditInputError otherwise) and changes nothing."""

    framework = ""

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    @abstractmethod
    def inventory(self) -> Inventory:
        """What the model holds and the optimizer holds, read without running anything."""

    @abstractmethod
    def values(self) -> Iterator[tuple[str, np.ndarray]]:
        """(name, a copy of its value) for every parameter and statistic of the inventory, one at a
        time: the audit keeps one copy of the model's values, and compares the next read as it goes."""

    def replica_values(self, replicas: int) -> Iterator[tuple[str, list[np.ndarray]]]:
        """(name, each replica's own copy of its value) under a strategy that keeps `replicas` copies in this process
        (the rooms with AUDIT_IN_PROCESS); a value kept once is every replica's."""
        raise NotImplementedError(f"{type(self).__name__} reads no replicas in one process")

    @abstractmethod
    def install(self) -> None:
        """Hook the optimizer's update so that each call records the gradients it receives and the
        layers' modes, without changing what the update does."""

    @abstractmethod
    def uninstall(self) -> None:
        """Undo install: the model and optimizer are as they were handed over."""

    @abstractmethod
    def take_updates(self) -> list[dict]:
        """The updates recorded since the last call, oldest first, each
        {"grads": {name: (state, norm)}, "model_training": bool | None, "modes": {path: bool}}."""


def grad_state(array: np.ndarray) -> tuple[str, float]:
    """("zero" | "nonzero", L2 norm) of a gradient as the update received it."""
    flat = array.ravel()
    if flat.dtype.itemsize < 4:  # float16 and the like: their own norm overflows at 256
        flat = flat.astype(np.float32)
    norm = float(np.linalg.norm(flat))  # BLAS nrm2: scaled, no overflow, no float64 copy
    return ("zero" if not np.any(array) else "nonzero"), (norm if math.isfinite(norm) else None)


class StepWatch:
    """One step's observation in two halves, for a step the audit does not call itself (a trainer's): made
    before the step (it reads every value), end() after it. The inventory's running statistics moving is
    never ordinary training, gradient or not."""

    def __init__(self, probe: Probe, index: int, inventory: Inventory):
        self.probe, self.index = probe, index
        self.wanted = {p.name for p in inventory.params}
        self.statistics = frozenset(p.name for p in inventory.params if p.statistic)
        self.before = dict(probe.values())
        self.start = time.perf_counter()

    def end(self) -> StepObservation:
        """What changed since the watch began, and what the updates saw."""
        seconds = time.perf_counter() - self.start
        updates = self.probe.take_updates()
        grads: dict[str, tuple[str, Optional[float]]] = {}
        for update in updates:  # several updates in a step: a gradient any of them saw counts
            for name, (state, norm) in update["grads"].items():
                if grads.get(name, ("none",))[0] != "nonzero":
                    grads[name] = (state, norm)
        first = updates[0] if updates else {}
        params = {}
        before = self.before
        for name, new in self.probe.values():
            old = before.pop(name, None)
            if old is None or name not in self.wanted:
                continue
            changed = old.shape != new.shape or not np.array_equal(old, new)
            state, norm = grads.get(name, ("unread", None))
            # how far, and whether it was at 0, matter only where a finding may follow: a parameter that
            # had a gradient and moved is ordinary training, and the commonest case by far (a statistic
            # with a gradient is not: jax differentiates the ones an optimizer holds)
            ordinary = state == "nonzero" and name not in self.statistics
            change = float(np.max(np.abs(new - old))) if changed and not ordinary and old.shape == new.shape \
                and old.size else 0.0
            change = change if math.isfinite(change) else 0.0  # a value gone to inf or NaN: moved, not measured
            params[name] = ParamStep(grad=state, grad_norm=norm, moved=changed, change=change,
                                     was_zero=False if ordinary else not np.any(old))
        return StepObservation(step=self.index, updates=len(updates), model_training=first.get("model_training"),
                               modes=first.get("modes", {}), params=params, seconds=seconds)


def observe_step(probe: Probe, step: Callable[[], object], index: int, inventory: Inventory) -> StepObservation:
    """Run the user's step once between two reads of every value, and return what changed and what
    the updates saw. The step's own exceptions propagate."""
    watch = StepWatch(probe, index, inventory)
    step()
    return watch.end()
