"""The audit inside Lightning's Trainer.fit: seed 1's model (a layer the forward pass skips), trained by a
Trainer that audits its first 3 batches and prints the findings, then trains on as it would without the audit.

    python examples/audit/torch/lightning_callback.py
"""
import pytorch_lightning as pl
import torch

from conformance.callbacks.lightning import AuditCallback


class Net(pl.LightningModule):
    """A second layer that the forward pass skips (`use_second` False), under SGD with momentum and weight decay."""

    def __init__(self, use_second=False):
        super().__init__()
        self.first, self.second, self.use_second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4), use_second

    def training_step(self, batch, batch_idx):
        x, y = batch
        h = self.first(x)
        return torch.nn.functional.mse_loss(self.second(h) if self.use_second else h, y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)


def train(callbacks, use_second=False, steps=6) -> Net:
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 4))
    module = Net(use_second)
    trainer = pl.Trainer(max_steps=steps, callbacks=callbacks, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", devices=1)
    trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=8))
    return module


if __name__ == "__main__":
    train([AuditCallback(steps=3)])  # prints the findings after the 3rd batch
