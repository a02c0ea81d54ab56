"""What the paddle room's tests share: the spec by instance id, one case's record through the adapter
(in-process, as the worker runs it), a runner started on a case, and dygraph as the yardstick of a
compiled run."""
import warnings

import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import paddle

from conformance.engine.judge import run_instance
from conformance.engine.scenario import initial_values, observe
from conformance.oracle.known import load_known, profile
from conformance.run import Run
from conformance.runners import adapter_path, load_adapter
from conformance.runners.paddle.runner import PaddleRunner
from conformance.spec import load_spec

SPEC = {i.id: i for i in load_spec()}


def record(instance_id, **axes):
    """The suite's record of one instance on the paddle adapter of the run `axes` name (eager loop by default),
    the class the worker loads for that run."""
    adapter = load_adapter(adapter_path("paddle", Run("paddle", **axes)), "paddle")
    runner = adapter(**axes)
    run = runner.run.replace(version=adapter.version())
    return run_instance(runner, SPEC[instance_id], profile(load_known("paddle"), run))


def started(runner, instance_id):
    """The runner built and given its optimizer for one case: (runner, case)."""
    case = SPEC[instance_id].case
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    return runner, case


def two_layers():
    paddle.seed(0)
    return paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)


def assert_observes_as_dygraph(runner, case, atol):
    """`runner` observes the case's losses and values as the eager (dygraph) loop does, within atol."""
    eager = observe(PaddleRunner(), case)
    for got, want in zip(observe(runner, case).steps, eager.steps, strict=True):
        assert got.loss == pytest.approx(want.loss, abs=atol)
        for name in want.values:
            np.testing.assert_allclose(got.values[name], want.values[name], atol=atol)
