"""conformance.callbacks.paddle.AuditCallback in hapi's Model.fit, on examples/audit/paddle/hapi_fit_callback.py: the
findings `audit` gives for the same model stepped by Model.train_batch (seed 1: an unused layer, L2 decay), no
finding in a clean model, and the same weights after fit with or without it."""
import numpy as np

import conformance
from conformance.auditor.examples import example

FIT = example("paddle", "hapi_fit_callback.py")
AuditCallback = FIT.AuditCallback


def _kinds(report):
    return {(f.kind, f.subject, f.variant) for f in report.findings}


def test_the_callback_finds_what_audit_finds_in_the_same_steps(capsys):
    callback = AuditCallback(steps=3)
    FIT.train([callback])
    assert callback.report.error is None and len(callback.report.steps) == 3
    assert "second.weight" in capsys.readouterr().err
    model, net, optimizer = FIT.prepared()
    data = FIT.Data()
    batches = iter([([data.x[i:i + 8]], [data.y[i:i + 8]]) for i in range(0, 32, 8)])  # hapi's inputs, labels
    direct = conformance.audit(net, optimizer, lambda: model.train_batch(*next(batches)), framework="paddle")
    assert _kinds(callback.report) == _kinds(direct) and {s for _, s, _ in _kinds(direct)} >= {"second.weight"}


def test_fit_ends_with_the_same_weights_with_or_without_the_callback():
    plain, audited = FIT.train([]), FIT.train([AuditCallback(steps=3, verbose=False)])
    for (name, a), (_, b) in zip(plain.state_dict().items(), audited.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_a_clean_model_gives_no_finding():
    callback = AuditCallback(steps=3, verbose=False)
    FIT.train([callback], use_second=True)
    assert callback.report.findings == [] and callback.report.error is None
