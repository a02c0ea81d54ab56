"""conformance.callbacks.hf.AuditCallback in Hugging Face's Trainer.train: it finds the layer the forward pass
skips, a clean model gives no finding, and training ends with the same weights with or without it."""
import pytest
import torch

transformers = pytest.importorskip("transformers")  # the torch env's extra (room.yaml); the older torch envs have none

from conformance.callbacks.hf import AuditCallback  # noqa: E402


class Net(torch.nn.Module):
    """A classifier head after an encoder layer, and a second head the forward pass never calls."""

    def __init__(self, use_spare=False):
        super().__init__()
        self.encoder, self.head, self.spare = torch.nn.Linear(4, 8), torch.nn.Linear(8, 2), torch.nn.Linear(8, 2)
        self.use_spare = use_spare

    def forward(self, x, labels=None):
        h = torch.tanh(self.encoder(x))
        logits = self.head(h) + (self.spare(h) if self.use_spare else 0)
        return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}


def _trained(tmp_path, callbacks, use_spare=False, steps=6):
    torch.manual_seed(0)
    x, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
    data = [{"x": x[i], "labels": y[i]} for i in range(32)]
    model = Net(use_spare)
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=steps, per_device_train_batch_size=8,
                                          learning_rate=1e-2, weight_decay=0.01, report_to=[], save_strategy="no",
                                          logging_strategy="no", use_cpu=True, seed=0, disable_tqdm=True)
    transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=callbacks).train()
    return model


def test_the_callback_finds_the_head_the_forward_pass_skips_then_steps_aside(tmp_path, capsys):
    callback = AuditCallback(steps=3)
    _trained(tmp_path, [callback])
    report = callback.report
    assert report is not None and report.error is None and len(report.steps) == 3
    assert {(f.kind, f.subject) for f in report.findings} == {("no-gradient", "spare.weight"),
                                                            ("no-gradient", "spare.bias")}
    assert "no-gradient (2)" in capsys.readouterr().err
    assert not callback.audit._probe  # the hook is off


def test_training_ends_with_the_same_weights_with_or_without_the_callback(tmp_path):
    plain, audited = _trained(tmp_path, []), _trained(tmp_path, [AuditCallback(steps=3, verbose=False)])
    for (name, a), (_, b) in zip(plain.state_dict().items(), audited.state_dict().items()):
        assert torch.equal(a, b), name


def test_a_clean_model_gives_no_finding(tmp_path):
    callback = AuditCallback(steps=3, verbose=False)
    _trained(tmp_path, [callback], use_spare=True)
    assert callback.report.findings == [] and callback.report.error is None
