"""What the audit's callbacks (conformance/callbacks/) cost inside a trainer: a training run of AUDIT_STEPS steps
of a ResNet-18 (each framework's audit_target()) with the callback auditing every step of it, next to the same run
without it. Each run starts from a fresh model, as a user's first fit does: Keras traces its train function in the
run (the callback's probe must be on before that), Lightning and Hugging Face's Trainer set up theirs.
"""
import importlib
import importlib.util
import statistics
import tempfile
import time

from .common import AUDIT_REPEATS, AUDIT_STEPS
from .frameworks import CASES, check

TRAINERS = {"keras": "tensorflow", "lightning": "torch", "hf": "torch"}
NEEDS = {"keras": "keras", "lightning": "pytorch_lightning", "hf": "transformers"}


def _keras(target, callbacks):
    import keras
    model, (images, labels) = target["model"], target["batch"]
    model.compile(optimizer=target["optimizer"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(images, labels, batch_size=len(images), epochs=AUDIT_STEPS, callbacks=callbacks, verbose=0)


def _lightning(target, callbacks):
    import pytorch_lightning as pl
    import torch

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = target["model"]

        def training_step(self, batch, batch_idx):
            return torch.nn.functional.cross_entropy(self.net(batch[0]), batch[1])

        def configure_optimizers(self):
            return target["optimizer"]
    images, labels = target["batch"]
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=len(images))
    pl.Trainer(max_steps=AUDIT_STEPS, callbacks=callbacks, logger=False, enable_checkpointing=False,
               enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", devices=1).fit(Module(), data)


def _hf(target, callbacks):
    import torch
    import transformers

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = target["model"]

        def forward(self, pixels, labels):
            return {"loss": torch.nn.functional.cross_entropy(self.net(pixels), labels)}
    images, labels = target["batch"]
    with tempfile.TemporaryDirectory() as out:
        args = transformers.TrainingArguments(output_dir=out, max_steps=AUDIT_STEPS, per_device_train_batch_size=len(images),
                                              learning_rate=0.1, report_to=[], save_strategy="no", logging_strategy="no",
                                              use_cpu=True, disable_tqdm=True)
        data = [{"pixels": images[i], "labels": labels[i]} for i in range(len(images))]
        transformers.Trainer(model=Model(), args=args, train_dataset=data, callbacks=callbacks,
                             optimizers=(target["optimizer"], None)).train()


RUNS = {"keras": _keras, "lightning": _lightning, "hf": _hf}


class CallbackCost:
    params = [list(TRAINERS)]
    param_names = ["trainer"]
    timeout = 1800.0

    def setup(self, trainer):
        check(TRAINERS[trainer])
        if importlib.util.find_spec(NEEDS[trainer]) is None:
            raise NotImplementedError(f"{NEEDS[trainer]} is not installed in this environment")

    def track_time_ratio(self, trainer):
        """median time of a run of AUDIT_STEPS steps with the callback auditing them / median time of the same run
        without it, each on a fresh ResNet-18, the two alternated AUDIT_REPEATS times (the issue asks for at most 1.5)"""
        callback = importlib.import_module(f"conformance.callbacks.{'hf' if trainer == 'hf' else trainer}").AuditCallback
        plain, audited = [], []
        for _ in range(AUDIT_REPEATS):
            for times, callbacks in ((plain, []), (audited, [callback(steps=AUDIT_STEPS, verbose=False)])):
                target = CASES[TRAINERS[trainer]].audit_target()
                start = time.perf_counter()
                RUNS[trainer](target, callbacks)
                times.append(time.perf_counter() - start)
            if callbacks[0].report is None or len(callbacks[0].report.steps) != AUDIT_STEPS:
                raise RuntimeError(f"the {trainer} callback audited no {AUDIT_STEPS} steps")
        return statistics.median(audited) / statistics.median(plain)

    track_time_ratio.unit = "ratio"
