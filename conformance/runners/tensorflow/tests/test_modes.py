"""The runs the tensorflow room offers and refuses: devices, graph mode (the loop's step and update in
tf.function, observing what eager code does), Keras' trainer (compile + fit, compiled or run eagerly),
and the cases each run refuses, in one line."""
import os

import numpy as np
import pytest

from conformance.__main__ import main
from conformance.engine.scenario import batch, initial_values, observe
from conformance.runners.base import Unavailable
from conformance.runners.tensorflow.runner import TensorFlowRunner

from .common import SPEC, record, tf


# ---------------------------------------------------------------- devices, version, refusals
def test_version_is_a_plain_str():
    assert type(TensorFlowRunner.version()) is str and TensorFlowRunner.version() == tf.__version__


def test_tf_cpp_logs_are_silenced():
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "2"


def test_cuda_device():
    if tf.config.list_physical_devices("GPU"):
        obs = observe(TensorFlowRunner(device="cuda"), SPEC["sgd-numerics"].case)
        assert len(obs.steps) == 3
    else:
        with pytest.raises(Unavailable, match=r"--device cuda: tensorflow .* sees no GPU"):
            TensorFlowRunner(device="cuda")


def test_ascend_device_is_unavailable():
    with pytest.raises(Unavailable, match="--device ascend: tensorflow .* has no Ascend device"):
        TensorFlowRunner(device="ascend")


def test_cuda_refused_with_one_line(capsys):
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("a GPU is available here")
    assert main(["run", "--framework", "tensorflow", "--device", "cuda"]) == 3
    err = capsys.readouterr().err
    assert "--device cuda" in err and len(err.strip().splitlines()) == 1


def test_graph_mode_backend_label():
    assert TensorFlowRunner(mode="graph").backend == "tf.function"
    assert TensorFlowRunner(mode="graph", api="trainer", backend="tf.function").backend == "tf.function"
    assert TensorFlowRunner().backend == ""
    with pytest.raises(Unavailable, match=r"not graph \(xla\) loop"):
        TensorFlowRunner(mode="graph", backend="xla")


@pytest.mark.parametrize("instance_id, axes, reason", [
    ("unfreeze-resumes[adam,default]", {}, "Keras' optimizer refuses a.weight, trainable again after its first update"),
    ("embedding-padding-row[sgd]", {}, "Keras' Embedding has no padding_idx"),
    ("clip-excluded-param[global]", {}, "Keras optimizers clip every gradient they update"),
    ("seed-4-bn-stats-not-regularized[sgd,all]", {"api": "trainer"},
     "Keras' fit hands the optimizer the model's trainable_variables"),
    ("train-mode-reaches-contained[plain_list]", {"api": "trainer"},
     "Keras' trainer runs the model in training mode only inside fit"),
    ("dropout-on-in-train", {"api": "trainer"}, "Keras' trainer runs the model in training mode only inside fit"),
    ("embedding-padding-row[adam]", {"api": "trainer"}, "Keras' Embedding has no padding_idx"),
])
def test_unsupported_with_one_line(instance_id, axes, reason):
    # which cases each run refuses is expected.yaml's (tests/contract); here: the reason is one line
    got = record(instance_id, **axes)
    assert got.verdict == "unsupported" and got.reason.startswith(reason) and "\n" not in got.reason


# ---------------------------------------------------------------- graph mode and the trainer run what they say
@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("api", ["loop", "trainer"])
def test_graph_mode_runs_the_model_in_a_graph(mode, api):
    """graph: the loop's step is a tf.function, and fit's default train function runs the model inside a
    graph; eager: the loop runs eagerly, and fit with run_eagerly=True too."""
    case = SPEC["seed-2-plain-list-sublayers"].case
    runner = TensorFlowRunner(mode=mode, api=api)
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    seen, call = [], runner.net.call

    def spy(x, path):
        seen.append(tf.executing_eagerly())
        return call(x, path)
    runner.net.call = spy
    path = ["block0", "block1", "head"]
    if api == "trainer":
        runner.train_step(path, *batch(case, 0, path), True)
    else:
        runner.forward(path, *batch(case, 0, path), train=True, backward=True)
        runner.update()
    # Keras may also trace the model symbolically (not eagerly) once to build it, in either mode
    assert seen and any(seen) is (mode == "eager")


@pytest.mark.parametrize("instance_id", ["seed-1-decay-moves-unused-layer[momentum]",
                                         "seed-3-stop-gradient-vs-frozen[adam,stop_gradient]",
                                         "never-used-param-grad[zeros]", "freeze-after-optimizer[momentum,default]",
                                         "conv-bn-running-stats", "embedding-rows-not-looked-up-state[adam]",
                                         "dropout-off-in-eval"])
def test_graph_mode_observes_what_eager_does(instance_id):
    """Unused layers, detach, zero-filled gradients, a layer frozen between steps (the step traced again),
    BatchNorm statistics of images, a sparse Embedding update, dropout in eval: the tf.function step
    gives the eager observation (None stays None; values to float32 rounding)."""
    case = SPEC[instance_id].case
    eager, compiled = observe(TensorFlowRunner(), case), observe(TensorFlowRunner(mode="graph"), case)
    assert (compiled.trainable, compiled.optimizer_params) == (eager.trainable, eager.optimizer_params)
    for e, g in zip(eager.steps, compiled.steps, strict=True):
        assert g.loss == pytest.approx(e.loss, rel=1e-5)
        for name, grad in e.grads.items():
            assert (g.grads[name] is None) == (grad is None), name
            if grad is not None:
                np.testing.assert_allclose(g.grads[name], grad, rtol=1e-4, atol=1e-6)
        for name, value in e.values.items():
            np.testing.assert_allclose(g.values[name], value, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------- Keras' trainer (--api trainer)
def test_trainer_compiles_again_after_a_freeze():
    """Keras: a changed `trainable` takes effect in fit only after compile() again (test_facts); the
    adapter compiles again, and the layer frozen between steps stays put."""
    obs = observe(TensorFlowRunner(mode="graph", api="trainer"), SPEC["freeze-after-optimizer[sgd,default]"].case)
    np.testing.assert_array_equal(obs.steps[3].values["a.weight"], obs.steps[1].values["a.weight"])
    assert not np.array_equal(obs.steps[1].values["a.weight"], obs.initial["a.weight"])
    assert record("freeze-after-optimizer[sgd,default]", mode="graph", api="trainer").verdict == "conform"


def test_trainer_eval_step_keeps_batchnorm_in_inference_under_fit():
    # seed-4: two fit steps train the statistics, then two fit steps whose model calls the layers with
    # training=False (the transfer-learning guide's idiom) leave them alone while the optimizer decays
    got = record("seed-4-bn-stats-not-regularized[momentum,default]", mode="graph", api="trainer")
    assert got.verdict == "conform"
    held = {c.check: c.held for c in got.checks}
    assert held["value bn.running_mean @ step 2"] and held["value bn.running_var @ step 3"]
    assert held["value bn.running_mean @ step 0"]  # the reference: fit's train step moved it

