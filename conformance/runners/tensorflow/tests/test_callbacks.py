"""conformance.callbacks.keras.AuditCallback in model.fit, on examples/audit/tensorflow/keras_fit_callback.py: it
finds what `audit` finds in seed 5's model, a clean model gives no finding, and fit ends with the same weights
with or without it."""
import numpy as np
import pytest

from conformance.auditor.examples import example

FIT = example("tensorflow", "keras_fit_callback.py")
AuditCallback = FIT.AuditCallback


def test_the_callback_finds_the_unused_batchnorm_in_fit_then_steps_aside(capsys):
    callback = AuditCallback(steps=3)
    FIT.train([callback])
    report = callback.report
    assert report is not None and report.error is None and len(report.steps) == 3
    assert {(f.kind, f.subject) for f in report.findings} == {("no-gradient", "input_norm.beta"),
                                                            ("no-gradient", "input_norm.gamma")}
    assert "no-gradient (2)" in capsys.readouterr().err
    assert not callback.audit._probe  # the wrapper is off the optimizer


def test_fit_ends_with_the_same_weights_with_or_without_the_callback():
    plain = FIT.train([])
    audited = FIT.train([AuditCallback(steps=3, verbose=False)])
    for a, b in zip(plain.weights, audited.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.name)


def test_a_clean_model_gives_no_finding():
    callback = AuditCallback(steps=2, verbose=False)
    FIT.train([callback], FIT.Clean, epochs=2)
    assert callback.report.findings == [] and callback.report.error is None and len(callback.report.steps) == 2


def test_a_fit_shorter_than_the_audit_reports_the_steps_it_ran():
    callback = AuditCallback(steps=50, verbose=False)
    FIT.train([callback], epochs=1)
    assert len(callback.report.steps) == 2 and {f.kind for f in callback.report.findings} == {"no-gradient"}


def test_a_model_fitted_before_is_an_error_of_the_report_and_fit_goes_on():
    """fit traced its train function without the probe: the audit cannot read its steps, says so in one line
    after the first of them, and fit runs on as it would."""
    model = FIT.train([], epochs=1)
    states, actions = FIT._data()
    callback = AuditCallback(verbose=False)
    history = model.fit(states, actions, batch_size=8, epochs=2, callbacks=[callback], verbose=0)
    assert "traced before the audit" in callback.report.error and "\n" not in callback.report.error
    assert len(history.history["loss"]) == 2


def test_steps_must_be_a_whole_number():
    from conformance.auditor import AuditInputError
    with pytest.raises(AuditInputError, match="steps must be a whole number from 1, not 0"):
        AuditCallback(steps=0)
