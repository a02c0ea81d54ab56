"""plain-containers-unregistered

torch.nn.Module registers a submodule only when it is assigned directly or held by nn.ModuleList /
nn.ModuleDict: blocks kept in a plain list, dict or tuple are missing from net.parameters(), so an
optimizer built from it never updates them. The reference semantics register every layer the model
holds, whatever container holds it.

Upstream: https://github.com/pytorch/pytorch/issues/1053 ("This is expected. Use nn.ModuleList.")
"""
import warnings

import torch

warnings.filterwarnings("ignore")

CONTAINERS = {
    "list": list,
    "dict": lambda blocks: dict(enumerate(blocks)),
    "tuple": tuple,
    "ModuleList": torch.nn.ModuleList,
    "ModuleDict": lambda blocks: torch.nn.ModuleDict({str(i): b for i, b in enumerate(blocks)}),
}


class Net(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.blocks = CONTAINERS[kind]([torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)])
        self.head = torch.nn.Linear(4, 2)

    def block_list(self):
        return list(self.blocks.values()) if isinstance(self.blocks, (dict, torch.nn.ModuleDict)) else list(self.blocks)

    def forward(self, x):
        for block in self.block_list():
            x = block(x)
        return self.head(x)


def one_step(kind):
    """Builds the net and an Adam from net.parameters(), takes one step; returns what the optimizer
    holds and whether the first block's and the head's weights moved."""
    torch.manual_seed(0)
    net = Net(kind)
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    block = net.block_list()[0]
    before, head_before = block.weight.detach().clone(), net.head.weight.detach().clone()
    net(torch.randn(8, 4)).pow(2).mean().backward()
    opt.step()
    held = sum(len(group["params"]) for group in opt.param_groups)
    moved = not torch.equal(before, block.weight)
    print(f"blocks in a {kind:10s}: optimizer holds {held} tensors (all three layers: 6, head alone: 2); "
          f"block weight moved: {moved}, head weight moved: {not torch.equal(head_before, net.head.weight)}; "
          f"block weight got a gradient: {block.weight.grad is not None}")
    return held, moved, block.weight.grad is not None


def check_unregistered(kind):
    held, moved, has_grad = one_step(kind)
    assert held == 2, f"a {kind} of blocks: the optimizer should hold the head's 2 tensors only"
    # the gradient flows (the forward uses the block), but no optimizer holds the block: it stays put
    assert has_grad and not moved


def test_plain_list_unregistered():
    check_unregistered("list")


def test_plain_dict_unregistered():
    check_unregistered("dict")


def test_plain_tuple_unregistered():
    check_unregistered("tuple")


def test_module_list_registers():
    """The control: the same blocks in an nn.ModuleList are registered and trained."""
    held, moved, _ = one_step("ModuleList")
    assert held == 6 and moved


def test_module_dict_registers():
    """The control: the same blocks in an nn.ModuleDict are registered and trained."""
    held, moved, _ = one_step("ModuleDict")
    assert held == 6 and moved


if __name__ == "__main__":
    print("torch", torch.__version__)
    test_plain_list_unregistered()
    test_plain_dict_unregistered()
    test_plain_tuple_unregistered()
    test_module_list_registers()
    test_module_dict_registers()
    print("confirmed: plain-containers-unregistered")
