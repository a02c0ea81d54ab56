# Standalone confirmation of each torch divergence the suite reports (no suite code).
import torch
torch.manual_seed(0)

# seed-2 / plain-containers-register: blocks in a plain list are not parameters of the model.
class Net(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        blocks = [torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)]
        self.blocks = {"list": blocks, "dict": dict(enumerate(blocks)), "tuple": tuple(blocks)}[kind]
        self.head = torch.nn.Linear(4, 2)
for kind in ("list", "dict", "tuple"):
    net = Net(kind)
    blk = list(net.blocks.values())[0] if kind == "dict" else net.blocks[0]
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    before = blk.weight.detach().clone()
    x = torch.randn(8, 4)
    for b in (net.blocks.values() if kind == "dict" else net.blocks):
        x = b(x)
    net.head(x).pow(2).mean().backward(); opt.step()
    print(f"plain {kind}: params seen by optimizer = {sum(1 for g in opt.param_groups for _ in g['params'])} "
          f"(expected 6), block weight moved: {not torch.equal(before, blk.weight)}")

# train-mode-reaches-contained: eval() does not reach a BatchNorm in a plain list.
class BNNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 3)
        self.norms = [torch.nn.BatchNorm1d(3)]
net = BNNet(); net.eval()
bn = net.norms[0]
before = bn.running_mean.clone()
bn(net.a(torch.randn(8, 4)))
print(f"plain list BN after net.eval(): training={bn.training}, running_mean moved: {not torch.equal(before, bn.running_mean)}")

# dropout-in-container-follows-eval[plain_list]: eval() does not reach a Dropout in a plain list
# either, so it keeps dropping (and rescaling) in eval: two eval calls on the same input differ.
class DropNet(torch.nn.Module):
    def __init__(self, holder):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 6), torch.nn.Linear(6, 2)
        self.drops = holder([torch.nn.Dropout(0.5)])
    def forward(self, x):
        return self.b(self.drops[0](self.a(x)))
x = torch.randn(8, 4)
for holder in (torch.nn.ModuleList, list):
    net = DropNet(holder); net.eval()
    with torch.no_grad():
        same = torch.equal(net(x), net(x))
    print(f"Dropout in a {holder.__name__} after net.eval(): training={net.drops[0].training}, "
          f"two eval calls equal: {same}")
