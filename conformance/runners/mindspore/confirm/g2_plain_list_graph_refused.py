"""MindSpore GRAPH_MODE: a model whose blocks sit in a plain Python list does not compile. The Cells
are unregistered, so their parameters keep their bare names ('weight', 'bias'), and graph mode requires
parameter names to be unique (https://discuss.mindspore.cn/t/topic/292); PyNative runs the same code
(and trains only what trainable_params() found). With nn.CellList it compiles. Confirms the errors of
seed-2-plain-list-sublayers and plain-containers-register[plain_list|plain_dict|plain_tuple] under
--mode graph (MindSpore's refusal, recorded as the case's error)."""
import os
import tempfile

import numpy as np
import mindspore as ms
from mindspore import nn

os.environ.setdefault("MS_OM_PATH", tempfile.mkdtemp())  # where a refused compile writes analyze_fail.ir


class Net(nn.Cell):
    def __init__(self, plain):
        super().__init__()
        blocks = [nn.Dense(4, 4), nn.Dense(4, 4)]
        self.blocks = blocks if plain else nn.CellList(blocks)
        self.head = nn.Dense(4, 2)

    def construct(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


rng = np.random.default_rng(0)
x, t = (ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))
outcome = {}
for mode, name in ((ms.PYNATIVE_MODE, "PYNATIVE_MODE"), (ms.GRAPH_MODE, "GRAPH_MODE")):
    ms.set_context(mode=mode)
    for plain in (True, False):
        net = Net(plain)
        opt = nn.Adam(net.trainable_params(), learning_rate=0.01)

        def forward_fn(x, t):
            return ((net(x) - t) ** 2).mean()
        grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters)
        net.set_train()
        try:
            opt(grad_fn(x, t)[1])
            outcome[name, plain] = f"trains {len(opt.parameters)} parameters"
        except RuntimeError as exc:
            outcome[name, plain] = f"RuntimeError: {str(exc).splitlines()[0]}"
        print(f"{name:13s} {'plain list' if plain else 'CellList  '}: {outcome[name, plain]}")
assert outcome["GRAPH_MODE", True].startswith("RuntimeError") and "unique name" in outcome["GRAPH_MODE", True]
assert not outcome["PYNATIVE_MODE", True].startswith("RuntimeError")
assert not outcome["GRAPH_MODE", False].startswith("RuntimeError")
print("confirmed: GRAPH_MODE refuses to compile a model with two unregistered Cells (duplicate parameter names)")
