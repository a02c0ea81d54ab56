"""conformance.callbacks.mindspore.AuditCallback in Model.train (PyNative, no dataset sink): seed 1's unused layer
moved by Momentum's weight decay on its zero-filled gradient, as `audit` finds it with the same TrainOneStepCell as
the step; no finding in a clean model; the same weights with or without the callback."""
import numpy as np
import pytest
import mindspore as ms
from mindspore import nn
from mindspore.train import Model

import conformance
from conformance.callbacks.mindspore import AuditCallback


class Net(nn.Cell):
    def __init__(self, use_second=False):
        super().__init__()
        self.first, self.second, self.use_second = nn.Dense(4, 4), nn.Dense(4, 4), use_second

    def construct(self, x):
        h = self.first(x)
        return self.second(h) if self.use_second else h


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 4)).astype("float32")


def _parts(use_second=False):
    ms.set_seed(0)
    net = Net(use_second)
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9, weight_decay=0.01)
    return net, optimizer


def _trained(callbacks, use_second=False, epochs=2):
    import mindspore.dataset as ds
    net, optimizer = _parts(use_second)
    x, y = _data()
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)
    Model(net, nn.MSELoss(), optimizer).train(epochs, data, callbacks=callbacks, dataset_sink_mode=False)
    return net


def _kinds(report):
    return {(f.kind, f.subject, f.variant) for f in report.findings}


def test_the_callback_finds_what_audit_finds_in_the_same_steps(capsys):
    callback = AuditCallback(steps=3)
    _trained([callback])
    assert callback.report.error is None and len(callback.report.steps) == 3
    assert "second.weight" in capsys.readouterr().err
    net, optimizer = _parts()
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), optimizer)  # what Model.train steps
    x, y = _data()
    batches = iter([(ms.Tensor(x[i:i + 8]), ms.Tensor(y[i:i + 8])) for i in range(0, 32, 8)])
    direct = conformance.audit(net, optimizer, lambda: train(*next(batches)), framework="mindspore")
    assert _kinds(callback.report) == _kinds(direct)
    assert ("moved-without-gradient", "second.weight", "functional-zero-filled-grads") in _kinds(direct)


def test_training_ends_with_the_same_weights_with_or_without_the_callback():
    plain, audited = _trained([]), _trained([AuditCallback(steps=3, verbose=False)])
    for a, b in zip(plain.get_parameters(), audited.get_parameters()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy(), err_msg=a.name)


def test_a_clean_model_gives_no_finding():
    callback = AuditCallback(steps=3, verbose=False)
    _trained([callback], use_second=True)
    assert callback.report.findings == [] and callback.report.error is None


def test_in_graph_mode_the_callback_refuses_in_one_line_before_any_step(graph_mode):
    """The probe reads PyNative steps only: on_train_begin says so, before the first step, in one line."""
    from conformance.auditor import AuditInputError
    with pytest.raises(AuditInputError, match="GRAPH_MODE") as refused:
        _trained([AuditCallback(steps=3, verbose=False)])
    assert "\n" not in str(refused.value)
