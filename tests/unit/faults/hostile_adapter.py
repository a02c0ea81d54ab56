"""Test-only adapters that send the parent malformed data or leave processes behind.

HostileRunner: the oracle, plus the misbehaviour named by a layer of the case's model.
FuzzRunner: the oracle, with what the worker sends for a layer `m<k>` broken as mutation k of the
pickle file named by $HOSTILE_MUTATIONS says (written by the fuzz test).
BadVersionRunner: reports a version that is not a string.
Where a layer forks a child, the child's pid goes to $HOSTILE_PIDS/<layer>.pid for the test to check.
"""
import os
import pickle
import signal
import time
from pathlib import Path

import numpy as np

import conformance.engine.judge
import conformance.engine.worker
from conformance.oracle.reference import ReferenceRunner


def _refuse_outside(pid):
    if os.getpid() != pid:
        raise RuntimeError("this object only unpickles in the process that pickled it")


class Poison:
    """Pickles in the worker; unpickling it anywhere else raises."""

    def __reduce__(self):
        return _refuse_outside, (os.getpid(),)


class BadDtype:
    """Pickles as a call of numpy.dtype that fails when the parent runs it."""

    def __reduce__(self):
        return np.dtype, ("no-such-dtype",)


def fork_child(layer: str) -> None:
    """A child that sleeps holding the worker's pipes (inherited), its pid left for the test."""
    pid = os.fork()
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    Path(os.environ["HOSTILE_PIDS"], f"{layer}.pid").write_text(str(pid))


class HostileRunner(ReferenceRunner):
    framework = "hostile"

    def _has(self, layer):
        return layer in self.model.layers

    def build(self, model, values):
        super().build(model, values)
        if self._has("fork-segv"):
            fork_child("fork-segv")
            os.kill(os.getpid(), signal.SIGSEGV)
        if self._has("fork-lingers"):
            fork_child("fork-lingers")
        if self._has("slow-oracle"):
            time.sleep(3600)  # the worker hangs; the test is about the oracle's own time
        if self._has("nap"):
            time.sleep(0.02)

    def forward(self, path, x, target, train, backward):
        loss = super().forward(path, x, target, train, backward)
        return str(loss) if self._has("string-loss") else loss

    def grads(self):
        grads = super().grads()
        if self._has("lacks-grad"):
            del grads["lacks-grad.weight"]
        if self._has("string-array"):
            grads["string-array.weight"] = np.full((2, 2), "x")
        return grads

    def values(self):
        values = super().values()
        if self._has("lacks-value"):
            del values["lacks-value.bias"]
        if self._has("values-list"):
            return list(values.values())
        if self._has("object-array"):
            values["object-array.weight"] = values["object-array.weight"].astype(object)
        if self._has("complex"):
            values["complex.weight"] = values["complex.weight"] + 0j
        if self._has("unpicklable"):
            values["unpicklable.weight"] = Poison()
        if self._has("bad-pickle"):
            values["bad-pickle.weight"] = BadDtype()
        return values

    def trainable(self):
        trainable = super().trainable()
        if self._has("lacks-trainable"):
            del trainable["lacks-trainable.bias"]
        return trainable

    def optimizer_params(self):
        return None if self._has("no-opt-params") else super().optimizer_params()


# ---------------------------------------------------------------- fuzzing the observation
POISON = "<poison>"  # marker in a mutation file: put a Poison() here


def _garbage(value):
    return Poison() if isinstance(value, str) and value == POISON else value


def mangle(obs, mutation):
    """Apply one mutation (slot, action, index, garbage) to an observation; returns the reply to send."""
    slot, action, index, garbage = mutation
    garbage = _garbage(garbage)
    if slot == "reply":
        return garbage
    if slot == "observation":
        return "ok", garbage
        return garbage
    if slot in ("steps", "steps[]"):
        if slot == "steps":
            obs.steps = garbage
        elif action == "delete":
            del obs.steps[index % len(obs.steps)]
        elif action == "add":
            obs.steps.append(obs.steps[-1])
        else:
            obs.steps[index % len(obs.steps)] = garbage
        return "ok", obs
    field = slot.removesuffix("[]")
    owner = obs.steps[index % len(obs.steps)] if field in ("loss", "grads", "values") else obs
    if not slot.endswith("[]"):
        setattr(owner, field, garbage)
        return "ok", obs
    container = getattr(owner, field)
    keys = list(container) if isinstance(container, dict) else list(range(len(container)))
    if action == "delete":
        del container[keys[index % len(keys)]]
    elif action == "add":
        if isinstance(container, dict):
            container["zz.extra"] = garbage
        else:
            container.append(garbage)
    else:
        container[keys[index % len(keys)]] = garbage
    return "ok", obs


class FuzzRunner(ReferenceRunner):
    framework = "fuzz"

    def __init__(self, run=None, **axes):
        super().__init__(run, **axes)
        # A hostile adapter may rewrite the worker itself: here, what it sends for each case.
        observe_safely = conformance.engine.worker.observe_safely

        def mangled(runner, case):
            outcome = observe_safely(runner, case)
            layer = next(iter(case.model.layers))
            if not layer.startswith("m"):
                return outcome
            mutations = pickle.loads(Path(os.environ["HOSTILE_MUTATIONS"]).read_bytes())
            return mangle(outcome[1], mutations[int(layer[1:])])

        conformance.engine.worker.observe_safely = mangled


class BadVersionRunner(ReferenceRunner):
    @staticmethod
    def version():
        return 2.0


class LongVersionRunner(ReferenceRunner):
    @staticmethod
    def version():
        return "9" * 5000


class GpuRunner(ReferenceRunner):
    """Says it computes on an accelerator, as a cuda adapter does."""
    def accelerator(self):
        return "Test GPU (compute capability 9.0), driver 1.2.3, CUDA 13.0"


class PackagesRunner(ReferenceRunner):
    """Names the packages beside its framework, as the jax room does."""
    def packages(self):
        return {"flax": "0.12.12", "optax": "0.2.8"}


class BadPackagesRunner(ReferenceRunner):
    def packages(self):
        return {"flax": "0.12\n12"}


class BadAcceleratorRunner(ReferenceRunner):
    def accelerator(self):
        return "Test GPU\nand a second line"
