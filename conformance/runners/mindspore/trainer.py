"""What only --api trainer needs: MindSpore's own trainer, the network Model.train builds and runs.

nn.TrainOneStepCell(nn.WithLossCell(model, nn.MSELoss()), optimizer), one per step path, called once
per step after set_train(train) (Model.train calls set_train() on it). Model.train itself adds only a
dataset pipeline per one-batch step (a test checks the two agree). TrainOneStepCell does not clip, so
clipped cases are Unsupported there. In graph mode the TrainOneStepCell is compiled, as Model.train
compiles it under GRAPH_MODE.
"""
from __future__ import annotations

from mindspore import nn

from ..base import Unsupported


def one_step_cell(model, opt, clip):
    """The network Model.train builds around the model Cell of a step path and the case's optimizer."""
    if clip is not None:
        raise Unsupported("nn.TrainOneStepCell (what Model.train builds) does not clip gradients")
    return nn.TrainOneStepCell(nn.WithLossCell(model, nn.MSELoss()), opt)
