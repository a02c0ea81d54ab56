# Standalone check (no suite code), not a divergence: torch.compile'd forward vs eager on what the
# graph-mode run must not change: train/eval switching, detach, frozen parameters (also frozen after
# compiling), BatchNorm running statistics, and a BatchNorm in a plain list (unregistered: eval()
# misses it in both). Run: python compile_matches_eager.py [aot_eager|inductor]
# torch 2.13.0 CPU: aot_eager bitwise equal at every step; inductor equal to float32 rounding (< 3e-6),
# and a gradient is None in the compiled run exactly where it is None in the eager one.
import sys

import torch

backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.bn, self.b = torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2)
        self.plain = [torch.nn.BatchNorm1d(2)]  # not registered
        self.detach = False

    def forward(self, x):
        y = self.a(x)
        if self.detach:
            y = y.detach()
        return self.plain[0](self.b(self.bn(y)))


# (train or eval, detach after a, parameter frozen for this step)
SCHEDULE = [("train", False, None), ("eval", False, None), ("train", False, None), ("train", True, None),
            ("train", False, "a.weight"), ("eval", False, "a.weight"), ("train", False, None)]


def run(compiled):
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    model = torch.compile(net, backend=backend, fullgraph=True) if compiled else net
    log = []
    for i, (mode, detach, frozen) in enumerate(SCHEDULE):
        getattr(net, mode)()
        net.detach = detach
        for name, p in net.named_parameters():
            p.requires_grad_(name != frozen)
        opt.zero_grad()
        loss = model(torch.randn(8, 4, generator=torch.Generator().manual_seed(i))).pow(2).mean()
        loss.backward()
        opt.step()
        grads = {n: p.grad for n, p in net.named_parameters()}
        state = {**net.state_dict(), "plain.running_mean": net.plain[0].running_mean}
        log.append((loss.item(), grads, {n: t.detach().clone() for n, t in state.items()}))
    return log


for i, (e, g) in enumerate(zip(run(False), run(True))):
    none_differs = [n for n in e[1] if (e[1][n] is None) != (g[1][n] is None)]
    grad = max((e[1][n] - g[1][n]).abs().max().item() for n in e[1] if e[1][n] is not None and g[1][n] is not None)
    value = max((e[2][n].double() - g[2][n].double()).abs().max().item() for n in e[2])
    print(f"step {i} {SCHEDULE[i]}: loss diff {abs(e[0] - g[0]):.1e}, grad diff {grad:.1e}, "
          f"state diff {value:.1e}, None only on one side: {none_differs or 'none'}")
print("dynamo:", dict(torch._dynamo.utils.counters["stats"]))
