"""plain-containers-unregistered

paddle.nn.Layer registers sublayers assigned directly or held by LayerList / LayerDict: Layers kept in a
plain list, dict or tuple are missing from net.parameters(), so an optimizer built from it never
updates them. The reference semantics register every layer the model holds, whatever container holds it.

Upstream: https://github.com/PaddlePaddle/Paddle/pull/21734
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

CONTAINERS = {
    "list": list,
    "dict": lambda blocks: {"b0": blocks[0], "b1": blocks[1]},
    "tuple": tuple,
    "LayerList": paddle.nn.LayerList,
    "LayerDict": lambda blocks: paddle.nn.LayerDict({"b0": blocks[0], "b1": blocks[1]}),
}


class Net(paddle.nn.Layer):
    def __init__(self, kind):
        super().__init__()
        self.blocks = CONTAINERS[kind]([paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 4)])
        self.head = paddle.nn.Linear(4, 2)

    def block_list(self):
        return list(self.blocks.values()) if isinstance(self.blocks, (dict, paddle.nn.LayerDict)) else list(self.blocks)

    def forward(self, x):
        for block in self.block_list():
            x = block(x)
        return self.head(x)


def one_step(kind):
    """Builds the net and an Adam from net.parameters(), takes one step; returns how many parameters
    net.parameters() holds and whether the first block's weight moved."""
    paddle.seed(0)
    net = Net(kind)
    opt = paddle.optimizer.Adam(0.01, parameters=net.parameters())
    block = net.block_list()[0]
    before, head_before = block.weight.numpy().copy(), net.head.weight.numpy().copy()
    net(paddle.randn([8, 4])).pow(2).mean().backward()
    opt.step()
    held = len(net.parameters())
    moved = not np.array_equal(before, block.weight.numpy())
    head_moved = not np.array_equal(head_before, net.head.weight.numpy())
    print(f"blocks in a {kind:9s}: len(net.parameters()) = {held} (all three layers: 6, head alone: 2); "
          f"block weight moved: {moved}, head weight moved: {head_moved}; "
          f"block weight got a gradient: {block.weight.grad is not None}")
    return held, moved, block.weight.grad is not None


def check_unregistered(kind):
    held, moved, has_grad = one_step(kind)
    assert held == 2, f"a {kind} of blocks: net.parameters() should hold the head's 2 parameters only"
    # the gradient flows (the forward uses the block), but no optimizer holds the block: it stays put
    assert has_grad and not moved


def test_plain_list_unregistered():
    check_unregistered("list")


def test_plain_dict_unregistered():
    check_unregistered("dict")


def test_plain_tuple_unregistered():
    check_unregistered("tuple")


def test_layer_list_registers():
    """The control: the same blocks in a LayerList are registered and trained."""
    held, moved, _ = one_step("LayerList")
    assert held == 6 and moved


def test_layer_dict_registers():
    """The control: the same blocks in a LayerDict are registered and trained."""
    held, moved, _ = one_step("LayerDict")
    assert held == 6 and moved


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_plain_list_unregistered()
    test_plain_dict_unregistered()
    test_plain_tuple_unregistered()
    test_layer_list_registers()
    test_layer_dict_registers()
    print("confirmed: plain-containers-unregistered")
