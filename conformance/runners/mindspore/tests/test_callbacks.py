"""conformance.callbacks.mindspore.AuditCallback in Model.train (PyNative, no dataset sink), on
examples/audit/mindspore/model_train_callback.py: seed 1's unused layer moved by Momentum's weight decay on its
zero-filled gradient, as `audit` finds it with the same TrainOneStepCell as the step; no finding in a clean model;
the same weights with or without the callback; a one-line refusal in GRAPH_MODE."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import conformance
from conformance.auditor.examples import example

TRAIN = example("mindspore", "model_train_callback.py")
AuditCallback = TRAIN.AuditCallback


def _kinds(report):
    return {(f.kind, f.subject, f.variant) for f in report.findings}


def test_the_callback_finds_what_audit_finds_in_the_same_steps(capsys):
    callback = AuditCallback(steps=3)
    TRAIN.train([callback])
    assert callback.report.error is None and len(callback.report.steps) == 3
    assert "second.weight" in capsys.readouterr().err
    net, optimizer = TRAIN.parts()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), optimizer)  # what Model.train steps
    x, y = TRAIN.data()
    batches = iter([(ms.Tensor(x[i:i + 8]), ms.Tensor(y[i:i + 8])) for i in range(0, 32, 8)])
    direct = conformance.audit(net, optimizer, lambda: step(*next(batches)), framework="mindspore")
    assert _kinds(callback.report) == _kinds(direct)
    assert ("moved-without-gradient", "second.weight", "functional-zero-filled-grads") in _kinds(direct)


def test_training_ends_with_the_same_weights_with_or_without_the_callback():
    plain, audited = TRAIN.train([]), TRAIN.train([AuditCallback(steps=3, verbose=False)])
    for a, b in zip(plain.get_parameters(), audited.get_parameters()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy(), err_msg=a.name)


def test_a_clean_model_gives_no_finding():
    callback = AuditCallback(steps=3, verbose=False)
    TRAIN.train([callback], use_second=True)
    assert callback.report.findings == [] and callback.report.error is None


def test_in_graph_mode_the_callback_refuses_in_one_line_before_any_step(graph_mode):
    """The probe reads PyNative steps only: on_train_begin says so, before the first step, in one line."""
    from conformance.auditor import AuditInputError
    with pytest.raises(AuditInputError, match="GRAPH_MODE") as refused:
        TRAIN.train([AuditCallback(steps=3, verbose=False)])
    assert "\n" not in str(refused.value)
