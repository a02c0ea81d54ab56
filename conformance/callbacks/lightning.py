"""Lightning's Trainer: `Trainer(callbacks=[AuditCallback()]).fit(module)` audits its first training steps.

The probe goes on at on_train_start, once the trainer holds the module and its optimizer: the torch probe's
step pre-hook on the optimizer (runners/torch/audit.py) reads each gradient as Lightning's closure returns,
before the update. After `steps` batches the hook comes off. The callback builds on `lightning.pytorch` where it
is installed, else on `pytorch_lightning`: hand it to the Trainer of the same package.
"""
from __future__ import annotations

try:
    from lightning.pytorch import Callback
except ImportError:
    from pytorch_lightning import Callback

from ..auditor import AuditInputError
from . import Audited


class AuditCallback(Audited, Callback):
    """Audits the first `steps` training batches of Trainer.fit (the module and the trainer's one optimizer),
    then steps aside. `report` holds the findings; `verbose` prints them to stderr."""
    framework, inside = "torch", "Trainer.fit"

    def on_train_start(self, trainer, pl_module):
        if len(trainer.optimizers) != 1:
            raise AuditInputError(f"the audit reads one optimizer; this trainer has {len(trainer.optimizers)}")
        self.model_type = type(pl_module).__name__
        self.audit.start(pl_module, trainer.optimizers[0])

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.audit.before_step()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.audit.after_step()

    def on_train_end(self, trainer, pl_module):
        self.audit.stop()
