"""nn.Embedding(padding_idx=...) only zeroes the padding row when the layer is built ("the output
embedding vector of this index will be initialized to zero ... The feature is inactivated"): the row
still gets its gradient, so pretrained values loaded into it move with SGD (no decay)."""
import numpy as np
import mindspore as ms
from mindspore import nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.emb, self.out = nn.Embedding(10, 4, padding_idx=0), nn.Dense(4, 2)

    def construct(self, x):
        return self.out(self.emb(x))


net = Net()
print("row 0 as built:", net.emb.embedding_table.asnumpy()[0])
rng = np.random.default_rng(0)
net.emb.embedding_table.set_data(ms.Tensor(rng.normal(size=(10, 4)).astype(np.float32)))  # pretrained values
x = ms.Tensor(np.array([0, 3, 0, 5]), ms.int64)  # the padding index is looked up
t = ms.Tensor(rng.normal(size=(4, 2)).astype(np.float32))
opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
before = net.emb.embedding_table.asnumpy()[0].copy()
_, grads = grad_fn(x, t)
g = dict(zip([p.name for p in opt.parameters], grads))["emb.embedding_table"].asnumpy()
print("gradient of the padding row:", g[0])
opt(grads)
moved = np.abs(net.emb.embedding_table.asnumpy()[0] - before).max()
print(f"padding row moved by {moved:.2e} in one SGD step without decay")
assert np.abs(g[0]).max() > 0 and moved > 0
print(f"confirmed (mindspore {ms.__version__}): padding_idx zeroes the row at build only; "
      "the row gets a gradient and trains")
