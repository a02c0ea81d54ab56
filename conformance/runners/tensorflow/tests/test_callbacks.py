"""conformance.callbacks.keras.AuditCallback in model.fit: it finds what `audit` finds in the same model, a clean
model gives no finding, and fit ends with the same weights with or without it."""
import importlib.util

import numpy as np
import pytest

from conformance.auditor.examples import EXAMPLES_DIR
from conformance.callbacks.keras import AuditCallback


def _example(name):
    spec = importlib.util.spec_from_file_location(f"callback_example_{name}", EXAMPLES_DIR / "tensorflow" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fitted(callbacks, epochs=6, model_class=None):
    """Seed 5's actor (a BatchNormalization whose output is discarded), or `model_class`, on its data, compiled and
    fitted, 2 batches an epoch."""
    import keras
    seed5 = _example("seed5_unused_batchnorm")
    states, actions = seed5._data()
    model = (model_class or seed5.Actor)()
    model(states[:2])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=1e-2, momentum=0.9), loss="mse")
    model.fit(states, actions, batch_size=8, epochs=epochs, callbacks=callbacks, verbose=0, shuffle=False)
    return model


def test_the_callback_finds_the_unused_batchnorm_in_fit_then_steps_aside(capsys):
    callback = AuditCallback(steps=3)
    _fitted([callback])
    report = callback.report
    assert report is not None and report.error is None and len(report.steps) == 3
    assert {(f.kind, f.subject) for f in report.findings} == {("no-gradient", "input_norm.beta"),
                                                            ("no-gradient", "input_norm.gamma")}
    assert "no-gradient (2)" in capsys.readouterr().err
    assert "apply" not in vars(callback.model.optimizer)  # the wrapper is gone from the optimizer


def test_fit_ends_with_the_same_weights_with_or_without_the_callback():
    plain = _fitted([])
    audited = _fitted([AuditCallback(steps=3, verbose=False)])
    for a, b in zip(plain.weights, audited.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path if hasattr(a, "path") else a.name)


def test_a_clean_model_gives_no_finding():
    import keras

    class Clean(keras.Model):
        def __init__(self):
            super().__init__()
            self.norm = keras.layers.BatchNormalization()
            self.dense = keras.layers.Dense(2)

        def call(self, x, training=None):
            return self.dense(self.norm(x, training=training))

    callback = AuditCallback(steps=2, verbose=False)
    _fitted([callback], epochs=2, model_class=Clean)
    assert callback.report.findings == [] and callback.report.error is None and len(callback.report.steps) == 2


def test_a_fit_shorter_than_the_audit_reports_the_steps_it_ran():
    callback = AuditCallback(steps=50, verbose=False)
    _fitted([callback], epochs=1)
    assert len(callback.report.steps) == 2 and {f.kind for f in callback.report.findings} == {"no-gradient"}


def test_steps_must_be_a_whole_number():
    from conformance.auditor import AuditInputError
    with pytest.raises(AuditInputError, match="steps must be a whole number from 1, not 0"):
        AuditCallback(steps=0)
