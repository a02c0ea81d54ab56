"""Paddle: net.eval() does not reach a Dropout kept in a plain list (an unregistered sublayer): it
stays in train mode and keeps dropping; in a LayerList it is switched to eval (the identity).
Confirms: dropout-in-container-follows-eval[plain_list] (variant plain-contained-layers-stay-train;
the oracle draws its own mask, so it cannot reproduce the values: see the report)."""
import warnings; warnings.filterwarnings("ignore")
import numpy as np, paddle

print("paddle", paddle.__version__)
paddle.seed(0)
x = paddle.ones([4, 6])
for kind, wrap in [("list", list), ("LayerList", paddle.nn.LayerList)]:
    net = paddle.nn.Layer()
    drop = paddle.nn.Dropout(p=0.5)
    net.blocks = wrap([drop])
    net.eval()
    y = drop(x).numpy()
    print(f"{kind:10s} after net.eval(): drop.training={drop.training}, output equals input: {np.array_equal(y, x.numpy())}")
    assert drop.training == (kind == "list") and np.array_equal(y, x.numpy()) == (kind == "LayerList")
print("CONFIRMED: a Dropout in a plain list stays in train mode after net.eval()")
