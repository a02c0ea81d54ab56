"""A clean, realistic torch model: embedding + LayerNorm + dropout text classifier, AdamW with the
usual no-decay parameter group for biases and LayerNorm. Expected: no finding.

    python -m conformance audit examples/audit/torch/clean_text_classifier.py:build --framework torch
"""
import torch
from torch import nn


class TextClassifier(nn.Module):
    def __init__(self, vocab=100, dim=32, classes=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(0.1)
        self.hidden = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, classes)

    def forward(self, tokens):
        x = self.dropout(self.norm(self.embedding(tokens).mean(1)))
        return self.out(torch.relu(self.hidden(x)))


def build():
    torch.manual_seed(0)
    model = TextClassifier()
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or n.startswith("norm.")]
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or n.startswith("norm."))]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    tokens, labels = torch.randint(1, 100, (8, 12)), torch.arange(8) % 4

    def step():
        model.train()
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(tokens), labels).backward()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "step": step}
