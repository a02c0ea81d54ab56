"""A clean, realistic paddle model: embedding + LayerNorm + dropout text classifier, AdamW with the
usual apply_decay_param_fun exempting biases and LayerNorm. Expected: no finding.

AdamW calls apply_decay_param_fun with each Parameter's own name (linear_1.b_0, layer_norm_0.w_0),
not the structured name of named_parameters() (out.bias, norm.weight): the function looks up the
decayed parameters' .name, as paddle's examples do. One written against the structured names
(`lambda name: not name.endswith("bias")`) would exempt nothing (decay-exclusion-ineffective).

    python -m conformance audit examples/audit/paddle/clean_text_classifier.py:build --framework paddle
"""
import paddle
from paddle import nn


class TextClassifier(nn.Layer):
    def __init__(self, vocab=100, dim=32, classes=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(0.1)
        self.hidden = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, classes)

    def forward(self, tokens):
        x = self.dropout(self.norm(self.embedding(tokens).mean(1)))
        return self.out(nn.functional.relu(self.hidden(x)))


def build():
    paddle.seed(0)
    model = TextClassifier()
    decay = {p.name for n, p in model.named_parameters() if not (n.endswith("bias") or n.startswith("norm."))}
    optimizer = paddle.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters(), weight_decay=0.01,
                                       apply_decay_param_fun=lambda name: name in decay)
    tokens, labels = paddle.randint(1, 100, [8, 12]), paddle.arange(8) % 4

    def step():
        model.train()
        nn.functional.cross_entropy(model(tokens), labels).backward()
        optimizer.step()
        optimizer.clear_grad()

    return {"model": model, "optimizer": optimizer, "step": step}
