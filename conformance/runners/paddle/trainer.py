"""Paddle's own trainer for the paddle adapter (--api trainer): hapi's Model,

    model = paddle.Model(net); model.prepare(optimizer, loss=paddle.nn.MSELoss())
    (or loss=paddle.nn.CrossEntropyLoss(...) for a case's cross-entropy)

and one `train_batch` per step (a forward-only step is `eval_batch`). hapi's Model is dygraph only,
so the adapter runs it in eager mode only (runner.py refuses --mode graph with it).

Data-parallel (--replicas 2, under paddle.distributed.launch): hapi's Model wraps the network in
paddle.DataParallel itself when the launch has more than one rank (its find_unused_parameters left at False),
and each rank's train_batch takes that rank's rows.

HapiTrainer is a mixin of PaddleRunner (runner.py): it uses the runner's net, opt, hapi (None until
the first step of a case) and _run_path, and common.py's criterion.
"""
from __future__ import annotations

import functools

import numpy as np

from ..base import Unsupported
from .common import criterion, paddle  # imported quietly there


class HapiTrainer:
    def _prepare_trainer(self, path, loss=None):
        if self.data_parallel is not None and self.data_parallel.find_unused:
            raise Unsupported("hapi's Model wraps the network in paddle.DataParallel itself, with no "
                              "find_unused_parameters setting")
        if self.hapi is None:
            self.hapi = paddle.Model(self.net)
            # mean((y - t) ** 2), or the case's cross-entropy: paddle.nn.CrossEntropyLoss (common.criterion)
            self.hapi.prepare(optimizer=self.opt, loss=paddle.nn.MSELoss() if loss is None else criterion(loss))
        # the one network the trainer holds runs this step's path
        self.net.run_path = functools.partial(self._run_path, path)

    def _trainer_forward(self, path, x, target, train, loss=None):
        # only a step without backward and update gets here; the trainer's own forward is eval_batch
        if train:
            raise Unsupported("hapi Model has no train-mode forward without backward (train_batch always updates)")
        self._prepare_trainer(path, loss)
        return float(np.asarray(self.hapi.eval_batch([x], [target])[0]).item())

    def train_step(self, path, x, target, train, loss=None):
        if isinstance(self.opt._parameter_list[0], dict):  # runner.py: no_decay outside AdamW
            raise Unsupported("hapi's train_batch calls Optimizer.minimize(), which takes no parameter groups")
        if not train:
            raise Unsupported("hapi Model.train_batch always switches the network to train mode")
        self._prepare_trainer(path, loss)
        # train_batch: network.train(), forward, loss.backward(), optimizer.minimize(loss),
        # network.clear_gradients() (set_to_zero=True); it returns the loss of the forward pass
        losses = self.hapi.train_batch([x], [target])
        return float(np.asarray(losses[0]).item())
