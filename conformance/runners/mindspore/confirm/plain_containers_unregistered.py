"""plain-containers-unregistered

MindSpore: only nn.CellList / nn.CellDict register the Cells they hold; Cells kept in a plain list, dict
or tuple attribute are invisible to trainable_params() (their parameters keep bare names such as
'weight'), so an optimizer built from it never updates them, and GRAPH_MODE refuses to compile two of
them (duplicate parameter names). The reference semantics register every layer the model holds,
whatever container holds it.

Upstream: https://mindspore.cn/docs/api/en/r1.3/api_python/nn/mindspore.nn.CellList.html
"""
import os
import tempfile

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
os.environ.setdefault("MS_OM_PATH", tempfile.mkdtemp())  # where a refused compile writes analyze_fail.ir
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402

CONTAINERS = {"list": list, "tuple": tuple, "dict": lambda cells: dict(zip("ab", cells)), "CellList": nn.CellList,
              "CellDict": lambda cells: nn.CellDict(dict(zip("ab", cells)))}
KEYED = ("dict", "CellDict")


class Net(nn.Cell):
    def __init__(self, kind):
        super().__init__()
        self.blocks = CONTAINERS[kind]([nn.Dense(4, 4), nn.Dense(4, 4)])
        self.head = nn.Dense(4, 2)

    def construct(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class DictNet(Net):
    def construct(self, x):
        for block in self.blocks.values():
            x = block(x)
        return self.head(x)


def data():
    rng = np.random.default_rng(0)
    return tuple(ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))


def test_cells_in_plain_containers_are_invisible_to_the_optimizer():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    x, t = data()
    seen = {}
    for kind in CONTAINERS:
        net = DictNet(kind) if kind in KEYED else Net(kind)
        first = list(net.blocks.values() if kind in KEYED else net.blocks)[0]
        opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
        grad_fn = ms.value_and_grad(lambda x, t: ((net(x) - t) ** 2).mean(), None, opt.parameters)
        w0 = first.weight.asnumpy().copy()
        opt(grad_fn(x, t)[1])
        seen[kind] = ([p.name for p in opt.parameters], first.weight.name,
                      not np.array_equal(w0, first.weight.asnumpy()))
    print("optimizer built from trainable_params(): " + "; ".join(
        f"{kind}: holds {len(names)} parameters, first block's weight named {name!r}, trained={moved}"
        for kind, (names, name, moved) in seen.items()))
    for kind in ("list", "tuple", "dict"):
        names, name, moved = seen[kind]
        assert names == ["head.weight", "head.bias"] and name == "weight" and not moved, kind
    for kind, first_name in (("CellList", "blocks.0.weight"), ("CellDict", "blocks.a.weight")):
        names, name, moved = seen[kind]
        assert len(names) == 6 and name == first_name and moved, kind  # registered: found and trained


def test_graph_mode_refuses_two_unregistered_cells():
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    x, t = data()
    outcome = {}
    for kind in ("list", "CellList"):
        net = Net(kind)
        opt = nn.Adam(net.trainable_params(), learning_rate=0.01)

        def forward_fn(x, t):
            return ((net(x) - t) ** 2).mean()
        grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters)
        net.set_train()
        try:
            opt(grad_fn(x, t)[1])
            outcome[kind] = f"trains {len(opt.parameters)} parameters"
        except RuntimeError as exc:
            outcome[kind] = f"RuntimeError: {str(exc).strip().splitlines()[0]}"
    print(f"GRAPH_MODE, plain list: {outcome['list']} | CellList: {outcome['CellList']}")
    assert outcome["list"].startswith("RuntimeError") and "unique name" in outcome["list"]
    assert outcome["CellList"] == "trains 6 parameters"


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_cells_in_plain_containers_are_invisible_to_the_optimizer()
    test_graph_mode_refuses_two_unregistered_cells()
    print("confirmed: plain-containers-unregistered")
