"""A clean, realistic MindSpore model: embedding + LayerNorm + dropout text classifier, trained by
nn.TrainOneStepCell(nn.WithLossCell(net, loss), optimizer), the network Model.train builds, with
nn.AdamWeightDecay in the two parameter groups of MindSpore's BERT recipe (decay_filter: no decay for
LayerNorm and biases). Expected: no finding.

    python -m conformance audit examples/audit/mindspore/clean_text_classifier.py:build --framework mindspore
"""
import numpy as np

import mindspore as ms
from mindspore import nn, ops


class TextClassifier(nn.Cell):
    def __init__(self, vocab=100, dim=32, classes=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.layernorm = nn.LayerNorm((dim,))
        self.dropout = nn.Dropout(p=0.1)
        self.hidden = nn.Dense(dim, dim)
        self.out = nn.Dense(dim, classes)

    def construct(self, tokens):
        x = self.dropout(self.layernorm(ops.mean(self.embedding(tokens), 1)))
        return self.out(ops.relu(self.hidden(x)))


def decay_filter(x):
    return "layernorm" not in x.name.lower() and "bias" not in x.name.lower()


def build():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = TextClassifier()
    params = net.trainable_params()
    group_params = [{"params": list(filter(decay_filter, params)), "weight_decay": 0.01},
                    {"params": [p for p in params if not decay_filter(p)], "weight_decay": 0.0}]
    optimizer = nn.AdamWeightDecay(group_params, learning_rate=1e-3)
    train_net = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()), optimizer)
    rng = np.random.default_rng(0)
    tokens = ms.Tensor(rng.integers(1, 100, size=(8, 12)), ms.int32)
    labels = ms.Tensor(np.arange(8) % 4, ms.int32)

    def step():
        train_net.set_train()
        return train_net(tokens, labels)

    return {"model": net, "optimizer": optimizer, "step": step}
