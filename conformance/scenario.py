"""Framework-neutral interpreter of a case's schedule.

`observe` drives any adapter through the case: build, make the optimizer, then per step clear,
forward (+ backward), read gradients, update, read values. The same function runs the reference
oracle and the real frameworks, so both are observed in exactly the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .runners.base import Runner
from .schema import Case, Model, Step, param_names


@dataclass
class StepObservation:
    loss: float
    grads: dict[str, np.ndarray | None]  # after backward, before the update
    values: dict[str, np.ndarray]        # after the update


@dataclass
class Observation:
    trainable: dict[str, bool]
    optimizer_params: list[str]
    initial: dict[str, np.ndarray]
    steps: list[StepObservation] = field(default_factory=list)

    def before(self, step: int) -> dict[str, np.ndarray]:
        return self.initial if step == 0 else self.steps[step - 1].values


def schedule(case: Case) -> list[Step]:
    """Steps with `repeat` unrolled."""
    return [step for step in case.steps for _ in range(step.repeat)]


def _width(model: Model, layer: str, side: int) -> int:
    spec = model.layers[model.layers[layer].tie or layer]
    return spec.linear[side] if spec.linear else spec.batchnorm


def initial_values(case: Case) -> dict[str, np.ndarray]:
    """Deterministic starting values, rounded to float32 so every runner starts identically."""
    rng = np.random.default_rng([case.seed, 1])
    out = {}
    for name in param_names(case.model):
        layer, role = name.split(".")
        spec = case.model.layers[layer]
        width = _width(case.model, layer, 1)
        if role == "weight" and spec.linear:
            value = rng.normal(0.0, 1.0 / np.sqrt(spec.linear[0]), tuple(spec.linear))
        elif role == "weight":
            value = 1.0 + 0.1 * rng.normal(size=width)
        elif role == "bias":
            value = 0.1 * rng.normal(size=width)
        else:
            # non-trivial running statistics: eval-mode cases then test their use without a
            # train step first, so they do not depend on the variance estimator of the update
            value = 0.2 * rng.normal(size=width) if role == "running_mean" else 1.0 + 0.5 * rng.random(width)
        out[name] = value.astype(np.float32)
    return out


def batch(case: Case, index: int, path: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Input and target for one step; float32, fixed by the case seed and the batch index."""
    rng = np.random.default_rng([case.seed, 2, index])
    x = rng.normal(size=(case.batch_size, _width(case.model, path[0], 0)))
    t = rng.normal(size=(case.batch_size, _width(case.model, path[-1], 1)))
    return x.astype(np.float32), t.astype(np.float32)


def observe(runner: Runner, case: Case) -> Observation:
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    obs = Observation(trainable=runner.trainable(), optimizer_params=runner.optimizer_params(),
                      initial=runner.values())
    for index, step in enumerate(schedule(case)):
        if step.clear:
            runner.clear_grads(case.clear)
        x, t = batch(case, index if step.batch is None else step.batch, step.path)
        loss = runner.forward(step.path, x, t, train=step.train, backward=step.backward)
        grads = runner.grads()
        if step.update:
            runner.update()
        obs.steps.append(StepObservation(loss=loss, grads=grads, values=runner.values()))
    return obs
