"""Paddle 3: Layers kept in a plain list / dict / tuple attribute are not registered: parameters()
(hence the optimizer) misses them, and net.eval() does not reach them (a BatchNorm in a plain list
keeps updating its running statistics). LayerList / LayerDict register.
Confirms: seed-2-plain-list-sublayers, plain-containers-register[plain_list|plain_dict|plain_tuple],
train-mode-reaches-contained[plain_list|plain_dict]."""
import warnings; warnings.filterwarnings("ignore")
import numpy as np, paddle

print("paddle", paddle.__version__)
for kind, wrap in [("list", list), ("dict", lambda ls: {"b0": ls[0], "b1": ls[1]}), ("tuple", tuple),
                   ("LayerList", paddle.nn.LayerList),
                   ("LayerDict", lambda ls: paddle.nn.LayerDict({"b0": ls[0], "b1": ls[1]}))]:
    net = paddle.nn.Layer()
    net.blocks = wrap([paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 4)])
    net.head = paddle.nn.Linear(4, 2)
    print(f"{kind:10s} len(net.parameters()) = {len(net.parameters())}  (head alone: 2, all three: 6)")
    assert len(net.parameters()) == (2 if kind in ("list", "dict", "tuple") else 6)

for kind, wrap in [("list", list), ("dict", lambda ls: {"bn": ls[0]}), ("LayerList", paddle.nn.LayerList)]:
    net = paddle.nn.Layer()
    bn = paddle.nn.BatchNorm1D(3)
    net.blocks = wrap([bn])
    net.eval()
    before = bn._mean.numpy().copy()
    bn(paddle.randn([8, 3]))
    moved = float(np.abs(bn._mean.numpy() - before).max())
    print(f"{kind:10s} after net.eval(): bn.training={bn.training}, running mean moved by {moved:.3g}")
    assert (moved > 0) == (kind != "LayerList")
print("CONFIRMED: plain containers are not registered; eval() does not reach them")
