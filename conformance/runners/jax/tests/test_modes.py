"""The jax room's runs besides eager, and what it refuses: graph mode (nnx.jit around the gradient and
the update) agrees with eager; --api trainer and an absent device are one-line refusals; the cases JAX
cannot express are Unsupported with why."""
import jax
import numpy as np
import pytest

from conformance.__main__ import main
from conformance.engine.scenario import observe
from conformance.runners.base import Unavailable, Unsupported
from conformance.runners.jax.runner import JaxRunner

from .common import SPEC, record


def test_graph_mode_is_jit_and_agrees_with_eager():
    runner = JaxRunner(mode="graph")
    assert runner.backend == "jit"
    for instance in ("seed-1-decay-moves-unused-layer[momentum]", "bn-eval-uses-running-stats", "conv-bn-running-stats",
                     "ce-label-smoothing[adam]"):
        eager, graph = observe(JaxRunner(), SPEC[instance].case), observe(JaxRunner(mode="graph"), SPEC[instance].case)
        for a, b in zip(eager.steps, graph.steps):
            for name, v in a.values.items():
                np.testing.assert_allclose(b.values[name], v, rtol=1e-5, atol=1e-6, err_msg=f"{instance} {name}")


def test_graph_mode_compiles_the_step():
    runner = JaxRunner(mode="graph")
    observe(runner, SPEC["sgd-numerics"].case)
    fn = next(iter(runner.grad_fns.values()))
    assert type(fn).__module__.startswith("flax.nnx")  # nnx.jit's wrapper, not the plain function


def test_trainer_and_absent_device_are_one_line(capsys):
    assert main(["run", "--framework", "jax", "--api", "trainer"]) == 3
    err = capsys.readouterr().err
    assert "no trainer of their own" in err and len(err.strip().splitlines()) == 1
    try:
        jax.devices("gpu")
        pytest.skip("a GPU backend is available here")
    except RuntimeError:
        pass
    with pytest.raises(Unavailable, match="--device cuda: jax .* no gpu backend"):
        JaxRunner(device="cuda")
    assert main(["run", "--framework", "jax", "--device", "cuda"]) == 3
    err = capsys.readouterr().err
    assert "--device cuda" in err and len(err.strip().splitlines()) == 1


def test_version_is_a_plain_str():
    assert type(JaxRunner.version()) is str and JaxRunner.version() == jax.__version__


@pytest.mark.parametrize("instance, why", [
    ("unused-param-grad[none]", "no None gradient"),
    ("default-lr[sgd]", "no default learning rate"),
    ("embedding-padding-row[sgd]", "no padding index"),
    ("ce-default-reduction[sgd]", "no default reduction"),
    ("ce-ignore-index-set[sgd]", "no ignore index"),
    ("ce-all-ignored-batch-default-label", "no ignore index"),
])
def test_what_jax_cannot_express_is_unsupported(instance, why):
    with pytest.raises(Unsupported, match=why):
        observe(JaxRunner(), SPEC[instance].case)


def test_freezing_between_steps_is_refused_by_the_engine():
    result = record("freeze-after-optimizer[sgd,default]")
    assert result.verdict == "unsupported" and "freezing" in result.reason
