"""Cells kept in a plain list / dict / tuple attribute are not registered: trainable_params() and
so the optimizer never see them, and set_train() does not reach them (a Cell starts with
training=False, so such a BatchNorm never uses batch statistics nor updates its moving stats)."""
import numpy as np
import mindspore as ms
from mindspore import nn

for kind in ("list", "dict", "tuple", "CellList"):
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            blocks = [nn.Dense(4, 4), nn.BatchNorm1d(4)]
            self.blocks = {"list": list, "tuple": tuple, "CellList": nn.CellList,
                           "dict": lambda b: dict(zip("ab", b))}[kind](blocks)
            self.head = nn.Dense(4, 2)
    net = Net()
    names = [p.name for p in net.trainable_params()]
    net.set_train(True)
    bn = (list(net.blocks.values()) if kind == "dict" else list(net.blocks))[1]
    bn(ms.Tensor(np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32) + 3))
    print(f"{kind:8}: trainable_params {names}; bn.training={bn.training}; moving_mean {bn.moving_mean.asnumpy()[0]:.3f}")
    assert (len(names) == 2) == (kind != "CellList")
print("confirmed: only CellList/CellDict register cells; plain containers are invisible to the optimizer and set_train")
