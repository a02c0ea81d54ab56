"""The audit's callbacks in the torch trainers, on examples/audit/torch/{lightning,hf_trainer}_callback.py: each finds
the layer its forward pass skips (no gradient: the trainers' zero_grad sets None, which torch's optimizers skip,
so no decay moves it), a clean model gives no finding, and training ends with the same weights with or without it."""
import importlib.util

import pytest
import torch

from conformance.auditor.examples import example

# the torch env's extras (room.yaml); the older torch envs have neither
TRAINERS = [pytest.param(name, marks=pytest.mark.skipif(not importlib.util.find_spec(module),
                                                        reason=f"{module} is not installed here"))
            for name, module in (("lightning", "pytorch_lightning"), ("hf_trainer", "transformers"))]
UNUSED = {"lightning": "second", "hf_trainer": "spare"}


def _trainer(name):
    module = example("torch", f"{name}_callback.py")
    return module, module.AuditCallback


@pytest.mark.parametrize("name", TRAINERS)
def test_the_callback_finds_the_layer_the_forward_pass_skips_then_steps_aside(name, capsys):
    module, AuditCallback = _trainer(name)
    callback = AuditCallback(steps=3)
    module.train([callback])
    report = callback.report
    assert report is not None and report.error is None and len(report.steps) == 3
    unused = UNUSED[name]
    assert {(f.kind, f.subject) for f in report.findings} == {("no-gradient", f"{unused}.weight"),
                                                            ("no-gradient", f"{unused}.bias")}
    assert "no-gradient (2)" in capsys.readouterr().err
    assert not callback.audit._probe  # the hook is off


@pytest.mark.parametrize("name", TRAINERS)
def test_training_ends_with_the_same_weights_with_or_without_the_callback(name):
    module, AuditCallback = _trainer(name)
    plain, audited = module.train([]), module.train([AuditCallback(steps=3, verbose=False)])
    for (key, a), (_, b) in zip(plain.state_dict().items(), audited.state_dict().items()):
        assert torch.equal(a, b), key


@pytest.mark.parametrize("name", TRAINERS)
def test_a_clean_model_gives_no_finding(name):
    module, AuditCallback = _trainer(name)
    callback = AuditCallback(steps=3, verbose=False)
    module.train([callback], True)
    assert callback.report.findings == [] and callback.report.error is None


@pytest.mark.parametrize("name", TRAINERS)
def test_a_run_shorter_than_the_audit_reports_the_steps_it_ran(name):
    module, AuditCallback = _trainer(name)
    callback = AuditCallback(steps=50, verbose=False)
    module.train([callback], steps=2)
    assert len(callback.report.steps) == 2
