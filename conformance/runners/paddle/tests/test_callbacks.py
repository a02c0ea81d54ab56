"""conformance.callbacks.paddle.AuditCallback in hapi's Model.fit: the findings `audit` gives for the same model
stepped by Model.train_batch (seed 1: an unused layer, L2 decay), no finding in a clean model, and the same
weights after fit with or without it."""
import numpy as np
import paddle

import conformance
from conformance.callbacks.paddle import AuditCallback


class Net(paddle.nn.Layer):
    def __init__(self, use_second=False):
        super().__init__()
        self.first, self.second, self.use_second = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 4), use_second

    def forward(self, x):
        h = self.first(x)
        return self.second(h) if self.use_second else h


class Data(paddle.io.Dataset):
    def __init__(self):
        rng = np.random.default_rng(0)
        self.x, self.y = rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 4)).astype("float32")

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


def _model(use_second=False):
    paddle.seed(0)
    net = Net(use_second)
    model = paddle.Model(net)
    optimizer = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=net.parameters(),
                                          weight_decay=paddle.regularizer.L2Decay(0.01))
    model.prepare(optimizer, paddle.nn.MSELoss())
    return model, net, optimizer


def _fitted(callbacks, use_second=False, epochs=2):
    model, net, _ = _model(use_second)
    model.fit(Data(), batch_size=8, epochs=epochs, callbacks=callbacks, verbose=0, shuffle=False)
    return net


def _kinds(report):
    return {(f.kind, f.subject, f.variant) for f in report.findings}


def test_the_callback_finds_what_audit_finds_in_the_same_steps(capsys):
    callback = AuditCallback(steps=3)
    _fitted([callback])
    assert callback.report.error is None and len(callback.report.steps) == 3
    assert "second.weight" in capsys.readouterr().err
    model, net, optimizer = _model()
    data = Data()
    batches = iter([([data.x[i:i + 8]], [data.y[i:i + 8]]) for i in range(0, 32, 8)])  # hapi's inputs, labels
    direct = conformance.audit(net, optimizer, lambda: model.train_batch(*next(batches)), framework="paddle")
    assert _kinds(callback.report) == _kinds(direct) and {s for _, s, _ in _kinds(direct)} >= {"second.weight"}


def test_fit_ends_with_the_same_weights_with_or_without_the_callback():
    plain, audited = _fitted([]), _fitted([AuditCallback(steps=3, verbose=False)])
    for (name, a), (_, b) in zip(plain.state_dict().items(), audited.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_a_clean_model_gives_no_finding():
    callback = AuditCallback(steps=3, verbose=False)
    _fitted([callback], use_second=True)
    assert callback.report.findings == [] and callback.report.error is None
