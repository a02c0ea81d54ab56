"""conformance.callbacks.lightning.AuditCallback in Lightning's Trainer.fit: it finds seed 1's unused layer (no
gradient: Lightning's zero_grad sets None, which torch's SGD skips, so no decay moves it), a clean module gives no
finding, and fit ends with the same weights with or without it."""
import pytest
import torch

pl = pytest.importorskip("pytorch_lightning")  # the torch env's extra (room.yaml); the older torch envs have none

from conformance.callbacks.lightning import AuditCallback  # noqa: E402


class Net(pl.LightningModule):
    """Seed 1: a second layer that the forward pass skips, under SGD with weight decay and momentum."""

    def __init__(self, use_second=False):
        super().__init__()
        self.first, self.second, self.use_second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4), use_second

    def training_step(self, batch, batch_idx):
        x, y = batch
        h = self.first(x)
        return torch.nn.functional.mse_loss(self.second(h) if self.use_second else h, y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)


def _fitted(callbacks, use_second=False, steps=6):
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 4))
    module = Net(use_second)
    trainer = pl.Trainer(max_steps=steps, callbacks=callbacks, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", devices=1)
    trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=8))
    return module


def test_the_callback_finds_the_unused_layer_then_steps_aside(capsys):
    callback = AuditCallback(steps=3)
    _fitted([callback])
    report = callback.report
    assert report is not None and report.error is None and len(report.steps) == 3
    assert {(f.kind, f.subject) for f in report.findings} == {("no-gradient", "second.weight"),
                                                            ("no-gradient", "second.bias")}
    assert "no-gradient (2)" in capsys.readouterr().err
    assert not callback.audit._probe  # the hook is off


def test_fit_ends_with_the_same_weights_with_or_without_the_callback():
    plain, audited = _fitted([]), _fitted([AuditCallback(steps=3, verbose=False)])
    for (name, a), (_, b) in zip(plain.state_dict().items(), audited.state_dict().items()):
        assert torch.equal(a, b), name


def test_a_clean_module_gives_no_finding():
    callback = AuditCallback(steps=3, verbose=False)
    _fitted([callback], use_second=True)
    assert callback.report.findings == [] and callback.report.error is None


def test_a_fit_shorter_than_the_audit_reports_the_steps_it_ran():
    callback = AuditCallback(steps=50, verbose=False)
    _fitted([callback], steps=2)
    assert len(callback.report.steps) == 2
