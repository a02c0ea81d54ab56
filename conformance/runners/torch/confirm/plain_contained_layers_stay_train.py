"""plain-contained-layers-stay-train

torch's Module.train()/eval() visit registered submodules only: a BatchNorm kept in a plain list or dict
stays in train mode (a new Module's default) after net.eval(), normalising with the batch statistics
and updating its running statistics, and a Dropout there keeps dropping. The reference semantics switch
every layer the model holds.

Upstream: https://docs.pytorch.org/docs/stable/generated/torch.nn.modules.container.ModuleList.html
"""
import warnings

import torch

warnings.filterwarnings("ignore")

CONTAINERS = {"list": list, "dict": lambda layers: {"0": layers[0]}, "ModuleList": torch.nn.ModuleList}


class BNNet(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.a = torch.nn.Linear(4, 3)
        self.norms = CONTAINERS[kind]([torch.nn.BatchNorm1d(3)])

    def norm(self):
        return self.norms["0"] if isinstance(self.norms, dict) else self.norms[0]

    def forward(self, x):
        return self.norm()(self.a(x))


class DropNet(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 6), torch.nn.Linear(6, 2)
        self.drops = CONTAINERS[kind]([torch.nn.Dropout(0.5)])

    def drop(self):
        return self.drops["0"] if isinstance(self.drops, dict) else self.drops[0]

    def forward(self, x):
        return self.b(self.drop()(self.a(x)))


def bn_after_eval(kind):
    """net.eval(), then one forward: the BatchNorm's mode, how far its running mean moved, and whether
    the output is normalised with the batch's own statistics (train mode) rather than the running ones."""
    torch.manual_seed(0)
    net = BNNet(kind)
    net.eval()
    bn = net.norm()
    before = bn.running_mean.clone()
    x = torch.randn(8, 4)
    with torch.no_grad():
        h, y = net.a(x), net(x)
    batch_norm = (h - h.mean(0)) / torch.sqrt(h.var(0, unbiased=False) + bn.eps)
    moved = (bn.running_mean - before).abs().max().item()
    with_batch_stats = torch.allclose(y, batch_norm, atol=1e-5)
    print(f"BatchNorm1d in a {kind:10s} after net.eval(): training={bn.training}, running mean moved by "
          f"{moved:.3g}, output normalised with the batch statistics: {with_batch_stats}")
    return bn.training, moved, with_batch_stats


def dropout_after_eval(kind):
    """net.eval(), then two calls on the same input: equal where the Dropout is the identity."""
    torch.manual_seed(0)
    net = DropNet(kind)
    net.eval()
    x = torch.randn(8, 4)
    with torch.no_grad():
        first, second = net(x), net(x)
    same = torch.equal(first, second)
    print(f"Dropout(0.5) in a {kind:10s} after net.eval(): training={net.drop().training}, two eval calls "
          f"on the same input equal: {same} (max diff {(first - second).abs().max().item():.3g})")
    return net.drop().training, same


def test_batchnorm_in_plain_list_stays_train():
    training, moved, with_batch_stats = bn_after_eval("list")
    assert training and moved > 0 and with_batch_stats


def test_batchnorm_in_plain_dict_stays_train():
    training, moved, with_batch_stats = bn_after_eval("dict")
    assert training and moved > 0 and with_batch_stats


def test_dropout_in_plain_list_keeps_dropping():
    training, same = dropout_after_eval("list")
    assert training and not same


def test_batchnorm_in_module_list_follows_eval():
    """The control: in an nn.ModuleList the BatchNorm is switched to eval."""
    training, moved, with_batch_stats = bn_after_eval("ModuleList")
    assert not training and moved == 0 and not with_batch_stats


def test_dropout_in_module_list_follows_eval():
    """The control: in an nn.ModuleList the Dropout is switched to eval (the identity)."""
    training, same = dropout_after_eval("ModuleList")
    assert not training and same


if __name__ == "__main__":
    print("torch", torch.__version__)
    test_batchnorm_in_plain_list_stays_train()
    test_batchnorm_in_plain_dict_stays_train()
    test_dropout_in_plain_list_keeps_dropping()
    test_batchnorm_in_module_list_follows_eval()
    test_dropout_in_module_list_follows_eval()
    print("confirmed: plain-contained-layers-stay-train")
