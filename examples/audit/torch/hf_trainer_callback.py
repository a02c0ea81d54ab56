"""The audit inside Hugging Face's Trainer.train: a classifier with a second head its forward pass never calls,
trained by a Trainer that audits its first 3 optimization steps and prints the findings.

    python examples/audit/torch/hf_trainer_callback.py
"""
import tempfile

import torch
import transformers

from conformance.callbacks.hf import AuditCallback


class Net(torch.nn.Module):
    """A head after an encoder layer, and a spare head the forward pass calls only with `use_spare`."""

    def __init__(self, use_spare=False):
        super().__init__()
        self.encoder, self.head, self.spare = torch.nn.Linear(4, 8), torch.nn.Linear(8, 2), torch.nn.Linear(8, 2)
        self.use_spare = use_spare

    def forward(self, x, labels=None):
        h = torch.tanh(self.encoder(x))
        logits = self.head(h) + (self.spare(h) if self.use_spare else 0)
        return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}


def train(callbacks, use_spare=False, steps=6) -> Net:
    torch.manual_seed(0)
    x, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
    data = [{"x": x[i], "labels": y[i]} for i in range(32)]
    model = Net(use_spare)
    with tempfile.TemporaryDirectory() as out:
        args = transformers.TrainingArguments(output_dir=out, max_steps=steps, per_device_train_batch_size=8,
                                              learning_rate=1e-2, weight_decay=0.01, report_to=[], save_strategy="no",
                                              logging_strategy="no", use_cpu=True, seed=0, disable_tqdm=True)
        transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=callbacks).train()
    return model


if __name__ == "__main__":
    train([AuditCallback(steps=3)])  # prints the findings after the 3rd step
