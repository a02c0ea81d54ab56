"""What only --api trainer needs: the nn.TrainOneStepCell that Model.train builds, refused for clipped
cases (it does not clip). runner.py's docstring says how the trainer runs are driven and checked.
"""
from __future__ import annotations

from mindspore import nn

from ..base import Unsupported


def one_step_cell(model, opt, clips, loss_fn=None):
    """The network Model.train builds around the model Cell of a step path, the loss the user hands it
    (`loss_fn`, nn.MSELoss() when None) and the case's optimizer."""
    if clips:
        raise Unsupported("nn.TrainOneStepCell (what Model.train builds) does not clip gradients")
    return nn.TrainOneStepCell(nn.WithLossCell(model, nn.MSELoss() if loss_fn is None else loss_fn), opt)
