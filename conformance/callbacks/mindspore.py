"""MindSpore's Model: `Model(net, loss_fn, optimizer).train(epochs, data, callbacks=[AuditCallback()],
dataset_sink_mode=False)` audits its first training steps.

In PyNative mode the train network (TrainOneStepCell) hands the optimizer its gradients by calling it, where the
mindspore probe reads them (runners/mindspore/audit.py); GRAPH_MODE, or a sunk dataset, compiles the update and
the probe refuses it in one line. The probe goes on at on_train_begin, on the Model's network and optimizer;
after `steps` steps it comes off.
"""
from __future__ import annotations

from mindspore.train import Callback

from . import Audited


class AuditCallback(Audited, Callback):
    """Audits the first `steps` training steps of Model.train, then steps aside. `report` holds the findings;
    `verbose` prints them to stderr."""
    framework, inside = "mindspore", "Model.train"

    def on_train_begin(self, run_context):
        params = run_context.original_args()
        self.model_type = type(params.network).__name__
        self.audit.start(params.network, params.optimizer)

    def on_train_step_begin(self, run_context):
        self.audit.before_step()

    def on_train_step_end(self, run_context):
        self.audit.after_step()

    def on_train_end(self, run_context):
        self.audit.stop()
