"""What the jax room's tests share: the spec by instance id, one case's record through the adapter
(in-process, as the worker runs it), and the pieces of a hand-written flax/optax schedule (an nnx.Module
holding nnx.Linear layers at a case's initial values, nnx.value_and_grad, optimizer.update)."""
import jax.numpy as jnp
import numpy as np
from flax import nnx

from conformance.engine.judge import run_instance
from conformance.engine.scenario import batch, initial_values
from conformance.oracle.known import load_known, profile
from conformance.runners.jax.runner import JaxRunner
from conformance.spec import load_spec

SPEC = {i.id: i for i in load_spec()}


def record(instance_id, **axes):
    """The suite's record of one instance on the jax adapter of the run `axes` name (eager by default)."""
    runner = JaxRunner(**axes)
    run = runner.run.replace(version=JaxRunner.version())
    return run_instance(runner, SPEC[instance_id], profile(load_known("jax"), run))


class Net(nnx.Module):
    """A user's model: one nnx.Linear attribute per linear layer of the case, at its initial values."""

    def __init__(self, case, *names):
        init = initial_values(case)
        for name in names:
            spec = case.model.layers[name]
            layer = nnx.Linear(*spec.linear, use_bias=spec.bias, rngs=nnx.Rngs(0))
            layer.kernel.set_value(jnp.asarray(init[f"{name}.weight"], jnp.float32))  # (in, out), as canonical
            if spec.bias:
                layer.bias.set_value(jnp.asarray(init[f"{name}.bias"], jnp.float32))
            setattr(self, name, layer)


def inputs(case, index, path):
    x, t = batch(case, index, path)
    return jnp.asarray(x, jnp.float32), jnp.asarray(t, jnp.float32)


def value(variable):
    return np.asarray(variable[...], dtype=np.float64)
