"""torch, eager: opt.zero_grad(); loss.backward(); opt.step()"""
from ..common import LR, N_LAYERS, THREADS, WEIGHT_DECAY, WIDTH, batch, layer_weights
from . import Case


class TorchCase(Case):
    """opt.zero_grad(); loss.backward(); opt.step()"""

    framework = "torch"
    modules = ("torch",)

    def __init__(self, mask, fraction, optimizer):
        super().__init__(mask, fraction, optimizer)
        import torch
        self.torch = torch
        if self.device == "cuda" and not torch.cuda.is_available():
            raise NotImplementedError(f"CONFORMANCE_BENCH_DEVICE=cuda: torch {torch.__version__} sees no "
                                      "CUDA device (torch.cuda.is_available() is False)")
        torch.set_num_threads(THREADS)
        try:
            torch.set_num_interop_threads(THREADS)
        except RuntimeError:
            pass  # already set in this process (a second case)
        dev = torch.device(self.device)
        layers = torch.nn.ModuleList()
        with torch.no_grad():
            for kernel, bias in layer_weights():
                layer = torch.nn.Linear(WIDTH, WIDTH)
                layer.weight.copy_(torch.from_numpy(kernel.T.copy()))  # torch keeps (out, in)
                layer.bias.copy_(torch.from_numpy(bias))
                layers.append(layer)
        self.layers = layers.to(dev)
        if mask == "frozen":
            for layer in self.layers[:self.k]:
                layer.requires_grad_(False)
        params = self.layers.parameters()  # frozen ones included, as users hand them over
        if optimizer == "sgd_wd":
            self.opt = torch.optim.SGD(params, lr=LR[optimizer], weight_decay=WEIGHT_DECAY)
        else:
            self.opt = torch.optim.AdamW(params, lr=LR[optimizer], weight_decay=WEIGHT_DECAY)
        self.masked = [p for layer in self.layers[:self.k] for p in layer.parameters()]
        x, t = batch()
        self.x, self.t = torch.from_numpy(x).to(dev), torch.from_numpy(t).to(dev)
        self.warm_up()

    def sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def train_step(self):
        torch = self.torch
        self.opt.zero_grad()  # the default: set_to_none=True in torch 2.x
        y = self.x
        for i in range(self.start, N_LAYERS):
            y = torch.tanh(self.layers[i](y))
            if i == self.cut:
                y = y.detach()
        loss = ((y - self.t) ** 2).mean()
        loss.backward()
        if self.zero:
            for p in self.masked:
                p.grad.mul_(0)
        self.opt.step()
        self.sync()

    def optimizer_step(self):
        self.opt.step()
        self.sync()
