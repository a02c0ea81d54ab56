"""The audit on tensorflow: every example of examples/audit/tensorflow/ gives exactly the findings its
expected.yaml lists, the probe reads gradients in the eager loop and in traced steps (fit, a user's
tf.function) without changing what the step does, finds only what Keras really leaves untracked, and
the command line keeps its promises on bad input.

Runs in the `tensorflow` (Keras 3) and `tensorflow215` (Keras 2) tox envs; expected.yaml scopes the
one finding that differs by version, with the reason."""
import json
import textwrap
import warnings

import numpy as np
import pytest

import conformance
from conformance.auditor import AuditError, AuditInputError
from conformance.auditor.examples import EXAMPLES_DIR, build, expected, observed, run_cli
from conformance.runners.tensorflow.audit import KerasProbe

from .common import KERAS2, keras, tf

EXPECTED = expected("tensorflow", tf.__version__)


def _audit_example(target, **kw):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Gradients do not exist")  # seed 5's discarded BN, by design
        return conformance.audit(**build("tensorflow", target), framework="tensorflow", **kw)


@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_each_example_gives_exactly_its_findings(target):
    report = _audit_example(target)
    assert report.error is None
    assert observed(report) == EXPECTED[target]


def _state(built):
    return [v.numpy() for v in built["model"].weights] + [v.numpy() for v in built["optimizer"].variables]


@pytest.mark.parametrize("target, warm", [("seed5_unused_batchnorm.py:build", 0), ("seed5_unused_batchnorm.py:fit", 0),
                                          ("seed5_unused_batchnorm.py:fit", 1)])
def test_the_audit_does_not_change_what_the_step_does(target, warm):
    """The same seeded example (the eager loop; train_on_batch's traced train function), stepped with
    and without the audit, ends with the same weights and optimizer state; uninstall leaves the
    optimizer's methods and the model's train function as they were. A train function traced before
    the audit (warm) is not traced again (a new trace draws other dropout masks in Keras 2): the audit
    stops after its first step, which ran as it would, saying it cannot read it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Gradients do not exist")
        plain = build("tensorflow", target)
        for _ in range(warm + (1 if warm else 3)):
            plain["step"]()
        expected_state = _state(plain)
        audited = build("tensorflow", target)  # seeded again: the same model, data and dropout masks
        for _ in range(warm):
            audited["step"]()
        before = audited["model"].train_function
        if warm:
            with pytest.raises(AuditError, match="step 1 of 3: the optimizer updated 1 time.s. in a graph traced "
                                                 "before the audit"):
                conformance.audit(**audited, framework="tensorflow")
        else:
            assert observed(conformance.audit(**audited, framework="tensorflow")) == EXPECTED[target]
    for n, (a, b) in enumerate(zip(expected_state, _state(audited))):
        np.testing.assert_array_equal(a, b, err_msg=f"variable {n}")
    assert len(expected_state) == len(_state(audited))
    assert not {"apply", "apply_gradients"} & set(vars(audited["optimizer"]))
    assert audited["model"].train_function is before and (before is None) is (warm == 0 or "fit" not in target)


def _tf_function_target(trace_before):
    built = build("tensorflow", "seed5_unused_batchnorm.py:build")
    model, optimizer = built["model"], built["optimizer"]
    rng = np.random.default_rng(0)
    states, actions = rng.normal(size=(16, 4)).astype("float32"), rng.normal(size=(16, 2)).astype("float32")

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(states, training=True) - actions))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    if trace_before:
        step()
    return {"model": model, "optimizer": optimizer, "step": step}


def test_a_tf_function_step_traced_during_the_audit_reads_which_gradients_are_none():
    """Traced, the wrapper reads which gradients are None (fixed at tracing), not the values of the
    others ("unread": reading them would change how grappler compiles the update): seed 5's finding
    holds as in the eager loop."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Gradients do not exist")
        report = conformance.audit(**_tf_function_target(False), framework="tensorflow")
    assert [obs.updates for obs in report.steps] == [1, 1, 1]
    grads = {name: seen.grad for name, seen in report.steps[0].params.items()}
    assert grads["input_norm.gamma"] == grads["input_norm.beta"] == "none"
    assert grads["layer_1.kernel"] == grads["action.bias"] == "unread"
    assert observed(report) == EXPECTED["seed5_unused_batchnorm.py:build"]


def test_graph_values_reads_the_values_in_a_traced_step_too(monkeypatch):
    monkeypatch.setattr(KerasProbe, "graph_values", True)
    report = _audit_example("seed5_unused_batchnorm.py:fit")
    grads = {name: seen.grad for name, seen in report.steps[0].params.items()}
    assert grads["input_norm.gamma"] == "none" and grads["layer_1.kernel"] == grads["action.bias"] == "nonzero"
    assert report.steps[0].params["action.bias"].grad_norm > 0
    assert observed(report) == EXPECTED["seed5_unused_batchnorm.py:fit"]


def test_a_tf_function_traced_before_the_audit_stops_it_in_one_line():
    """Its graph never calls the wrapper; the optimizer's iterations count its update all the same."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Gradients do not exist")
        with pytest.raises(AuditError, match="step 1 of 3: the optimizer updated 1 time.s. in a graph traced "
                                             "before the audit, which the audit cannot read"):
            conformance.audit(**_tf_function_target(True), framework="tensorflow")


class Untracked(keras.Model):
    """A layer in each kind of holder, all called; only some of them Keras tracks."""

    def __init__(self):
        super().__init__()
        self.in_list = [keras.layers.Dense(3)]
        self.in_dict = {"a": keras.layers.Dense(3)}
        self.in_tuple = (keras.layers.Dense(3),)
        self.in_set = {keras.layers.Dense(3)}
        self.in_frozenset = frozenset([keras.layers.Dense(3)])
        object.__setattr__(self, "hidden", keras.layers.Dense(3))
        self.scale = tf.Variable(1.0)
        self.dropouts = {keras.layers.Dropout(0.1)}  # no weight: it misses nothing
        self.head = keras.layers.Dense(2)

    def call(self, x):
        for layer in (self.in_list[0], self.in_dict["a"], self.in_tuple[0], next(iter(self.in_set)),
                      next(iter(self.in_frozenset)), self.hidden, next(iter(self.dropouts))):
            x = layer(x)
        return self.head(x) * self.scale


def test_only_what_keras_leaves_untracked_is_unregistered():
    """Keras 3 tracks lists, dicts, tuples and sets, not a frozenset, a layer set with
    object.__setattr__, or a raw tf.Variable attribute; Keras 2 tracks the tf.Variable, not a set.
    Compiled and fitted, a functional and a Sequential model hold nothing untracked (Keras' own
    metrics, graph bookkeeping and Sequential's inner Functional are not the user's)."""
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 2), "float32")
    model = Untracked()
    model(x)
    inventory = KerasProbe(model, keras.optimizers.SGD()).inventory()
    missed = {"in_frozenset[0]", "hidden"} | ({"in_set[0]"} if KERAS2 else set())
    assert {layer.path for layer in inventory.layers if not layer.registered} == missed
    params = {p.name: p for p in inventory.params if not p.registered}
    untracked_variable = set() if KERAS2 else {"scale"}
    assert set(params) == {f"{path}.{w}" for path in missed for w in ("kernel", "bias")} | untracked_variable
    assert not any(p.in_optimizer for p in params.values())

    inputs = keras.Input((3,))
    functional = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.BatchNormalization()(inputs)))
    sequential = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3), keras.layers.Dense(2)])
    for model in (functional, sequential):
        optimizer = keras.optimizers.SGD()
        model.compile(optimizer=optimizer, loss="mse", metrics=["mae"])
        model.fit(x, y, verbose=0)
        inventory = KerasProbe(model, optimizer).inventory()
        assert all(layer.registered for layer in inventory.layers)
        assert all(p.registered for p in inventory.params)
        # built by fit: what it was built with; the statistics were not among them
        assert {p.name for p in inventory.params if not p.in_optimizer} == \
            {p.name for p in inventory.params if p.statistic}


def test_reading_the_inventory_changes_nothing_in_the_optimizer():
    """Keras' own weight-decay test answers `decayed` and the exclusion's reach; the cache it fills
    (Keras 3) is left as it was."""
    built = build("tensorflow", "decay_exclusion.py:build")
    state = {k: dict(v) if isinstance(v, dict) else v for k, v in vars(built["optimizer"]).items()}
    inventory = KerasProbe(built["model"], built["optimizer"]).inventory()
    assert {k: dict(v) if isinstance(v, dict) else v for k, v in vars(built["optimizer"]).items()} == state
    assert all(p.decayed for p in inventory.params) is (not KERAS2)


def test_the_probe_refuses_what_is_not_keras_and_a_model_without_weights():
    model = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(AuditInputError, match="no weights yet"):
        KerasProbe(model, keras.optimizers.SGD())
    with pytest.raises(AuditInputError, match="model is a builtins.dict, not a keras.Model"):
        KerasProbe({}, keras.optimizers.SGD())


def _audit(tmp_path, target, *options):
    return run_cli("tensorflow", tmp_path, target, *options)


def test_findings_exit_1_and_the_json_says_them(tmp_path):
    done = _audit(tmp_path, str(EXAMPLES_DIR / "tensorflow" / "seed3_frozen_conv.py:stop_gradient"))
    assert done.returncode == 1, done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["schema"] == 1 and doc["steps_done"] == 3 and doc["error"] is None
    assert [(f["kind"], f["subject"]) for f in doc["findings"]] == [("no-gradient", "conv1.kernel")]
    assert "conv1.kernel (Conv2D)" in done.stdout and "step 3/3" in done.stderr


TARGET = textwrap.dedent("""\
    import keras
    import tensorflow as tf

    def build():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])
        optimizer = keras.optimizers.SGD(learning_rate=0.1, weight_decay=0.1)
        calls = [0]

        def step():
            calls[0] += 1
            if calls[0] == 2:
                raise RuntimeError('out of memory')
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(model(tf.ones((1, 2))))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))

        return {"model": model, "optimizer": optimizer, "step": step}
    """)


def test_a_step_that_raises_is_one_line_and_the_steps_before_it_are_kept(tmp_path):
    (tmp_path / "user.py").write_text(TARGET)
    done = _audit(tmp_path, f"{tmp_path / 'user.py'}:build", "--timeout", "120")
    assert done.returncode == 3, done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["steps_done"] == 1 and "step 2 of 3 raised RuntimeError: out of memory" in doc["error"]
    assert "\n" not in doc["error"] and "Traceback" not in done.stdout


@pytest.mark.parametrize("body, says", [
    ("return {'model': [1, 2], 'optimizer': None, 'step': print}", "model is a builtins.list, not a keras.Model"),
    ("m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])\n"
     "    return {'model': m, 'optimizer': 'sgd', 'step': print}",
     "optimizer is a builtins.str, not a keras.optimizers.Optimizer"),
])
def test_a_model_or_optimizer_of_another_kind_is_refused_with_exit_2(tmp_path, body, says):
    (tmp_path / "user.py").write_text(f"import keras\n\ndef build():\n    {body}\n")
    done = _audit(tmp_path, f"{tmp_path / 'user.py'}:build")
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_replicas_the_audit_compares_each_replicas_copies_under_a_mirrored_strategy(tmp_path):
    """examples/audit/tensorflow/mirrored_replicas.py under `--replicas 2`: two logical CPU devices in the audited
    process, a MirroredStrategy over them, fit. The weights' copies stay equal; each replica's copy of the moving
    statistics is its own, and each replica's update is counted."""
    done = run_cli("tensorflow", tmp_path, str(EXAMPLES_DIR / "tensorflow" / "mirrored_replicas.py") + ":build",
                   "--replicas", "2")
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert done.returncode == 1 and doc["error"] is None and doc["steps_done"] == 3, done.stderr
    assert {(f["kind"], f["subject"]) for f in doc["findings"]} == {
        ("replica-statistics-differ", "layers[1].moving_mean"), ("replica-statistics-differ", "layers[1].moving_variance")}
    assert all(f"step {n}/3: " in done.stderr for n in (1, 2, 3)) and done.stderr.count(", 2 update(s)") == 3
