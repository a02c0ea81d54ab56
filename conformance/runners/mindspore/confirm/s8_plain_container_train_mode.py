"""MindSpore: Cell.set_train() reaches registered cells only. A BatchNorm kept in a plain list never
enters train mode (a Cell starts with training=False), so it normalizes with its moving statistics and
never updates them. Confirms: train-mode-reaches-contained[plain_list|plain_dict]."""
import numpy as np
import mindspore as ms
from mindspore import nn

ms.set_context(mode=ms.PYNATIVE_MODE)


class Net(nn.Cell):
    def __init__(self, plain):
        super().__init__()
        bn = nn.BatchNorm1d(3)
        self.norms = [bn] if plain else nn.CellList([bn])

    def construct(self, x):
        return self.norms[0](x)


for plain in (True, False):
    net = Net(plain)
    net.set_train(True)
    bn = net.norms[0]
    before = bn.moving_mean.asnumpy().copy()
    net(ms.Tensor(np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)))
    moved = not np.array_equal(before, bn.moving_mean.asnumpy())
    print(f"{'plain list' if plain else 'CellList  '}: bn.training={bn.training}, moving_mean updated={moved}")
