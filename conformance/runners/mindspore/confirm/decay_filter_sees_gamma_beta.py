"""decay-filter-sees-gamma-beta

MindSpore: a weight-decay filter written over Parameter.name, as MindSpore's parameter-group examples
filter (`[p for p in net.trainable_params() if 'bias' not in p.name]`), sees a LayerNorm's and a
BatchNorm's weight and bias as `<layer>.gamma` and `<layer>.beta`, and an Embedding's table as
`<layer>.embedding_table`. A filter on "bias" (or on "LayerNorm.weight", the torch recipe) then leaves the
normalisation parameters decayed. The reference is torch's named_parameters(): `<layer>.weight`, `<layer>.bias`.

Upstream: https://mindspore.cn/docs/api/en/r1.6/api_python/nn/mindspore.nn.AdamWeightDecay.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn, ops  # noqa: E402


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a, self.LayerNorm, self.bn = nn.Dense(4, 4), nn.LayerNorm((4,)), nn.BatchNorm1d(4)
        self.emb = nn.Embedding(5, 4)


def test_filter_sees_gamma_beta_and_embedding_table():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = Net()
    names = [p.name for p in net.trainable_params()]
    print("Parameter.name:", names)
    assert names == ["a.weight", "a.bias", "LayerNorm.gamma", "LayerNorm.beta", "bn.gamma", "bn.beta",
                     "emb.embedding_table"]
    # the torch recipe's filter, as groups: the decay reaches the norm parameters it meant to exclude
    for p in net.trainable_params():
        p.set_data(ms.Tensor(np.full(p.shape, 1.0, np.float32)))
    no_decay = ["bias", "LayerNorm.weight"]
    params = net.trainable_params()
    groups = [{"params": [p for p in params if not any(nd in p.name for nd in no_decay)], "weight_decay": 0.5},
              {"params": [p for p in params if any(nd in p.name for nd in no_decay)], "weight_decay": 0.0}]
    opt = nn.SGD(groups, learning_rate=0.1)
    opt(tuple(ops.zeros_like(p) for p in opt.parameters))  # zero gradients: only decay moves a value
    after = {p.name: float(p.asnumpy().flat[0]) for p in opt.parameters}
    print("after one decay-only step (0.95 = decayed):", after)
    assert after["a.bias"] == 1.0  # the filter matched "a.bias"...
    assert np.isclose(after["LayerNorm.gamma"], 0.95) and np.isclose(after["LayerNorm.beta"], 0.95)  # ...not these


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_filter_sees_gamma_beta_and_embedding_table()
    print("confirmed: decay-filter-sees-gamma-beta")
