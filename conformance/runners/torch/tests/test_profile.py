"""What the contract on whole runs (tests/contract, expected.yaml) does not see: which of the profile's
variants documents a divergence. One case through the adapter and the judge."""
import torch

from conformance.engine.judge import run_instance
from conformance.oracle.known import load_known, profile
from conformance.run import Run
from conformance.runners.torch.runner import TorchRunner

from .common import SPEC


def test_a_dropout_in_a_plain_list_is_documented_by_the_train_mode_variant():
    """A Dropout in a plain list keeps dropping in eval: the variant that keeps plain-contained layers in
    train mode documents it, alone (the registration variant is in force too, and not needed)."""
    run = Run("torch", torch.__version__)
    record = run_instance(TorchRunner(), SPEC["dropout-in-container-follows-eval[plain_list]"],
                          profile(load_known("torch"), run))
    assert (record.outcome, record.variants) == ("documented", ["plain-contained-layers-stay-train"])
