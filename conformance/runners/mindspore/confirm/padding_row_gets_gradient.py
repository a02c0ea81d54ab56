"""padding-row-gets-gradient

MindSpore: nn.Embedding(vocab_size, embedding_size, padding_idx=...) only zeroes the padding row when
the layer is built; the lookup's gradient reaches that row like any other, so values loaded into it (a
pretrained table) move with plain SGD. The reference semantics give the padding row no gradient, so
without decay it never moves (torch's padding_idx).

Upstream: https://www.mindspore.cn/docs/zh-CN/r2.9.0/api_python/nn/mindspore.nn.Embedding.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.emb, self.out = nn.Embedding(10, 4, padding_idx=0), nn.Dense(4, 2)

    def construct(self, x):
        return self.out(self.emb(x))


def test_padding_row_gets_gradient_and_trains():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = Net()
    built = net.emb.embedding_table.asnumpy()[0].copy()
    rng = np.random.default_rng(0)
    net.emb.embedding_table.set_data(ms.Tensor(rng.normal(size=(10, 4)).astype(np.float32)))  # pretrained values
    x = ms.Tensor(np.array([0, 3, 0, 5]), ms.int64)  # the padding index is looked up
    t = ms.Tensor(rng.normal(size=(4, 2)).astype(np.float32))
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)  # no weight decay
    grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
    before = net.emb.embedding_table.asnumpy()[0].copy()
    _, grads = grad_fn(x, t)
    g = dict(zip([p.name for p in opt.parameters], grads))["emb.embedding_table"].asnumpy()
    opt(grads)
    moved = np.abs(net.emb.embedding_table.asnumpy()[0] - before).max()
    print(f"padding row as built {built}; its gradient {g[0]}; moved {moved:.2e} in one SGD step without decay")
    assert not np.any(built)  # padding_idx zeroes the row at build...
    assert np.abs(g[0]).max() > 0 and moved > 0  # ...and nothing more: the row gets a gradient and trains


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_padding_row_gets_gradient_and_trains()
    print("confirmed: padding-row-gets-gradient")
