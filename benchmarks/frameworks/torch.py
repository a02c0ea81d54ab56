"""torch, eager: opt.zero_grad(); loss.backward(); opt.step()"""
from ..common import AUDIT_BATCH, AUDIT_IMAGE, LR, N_LAYERS, THREADS, WEIGHT_DECAY, WIDTH, batch, layer_weights
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

    @staticmethod
    def audit_target():
        """torchvision's ResNet-18 layout written out (torchvision is not installed): SGD with
        momentum and weight decay, the usual zero_grad / backward / step."""
        import torch
        from torch import nn
        torch.set_num_threads(THREADS)
        torch.manual_seed(0)

        class Basic(nn.Module):
            def __init__(self, cin, cout, stride):
                super().__init__()
                self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
                self.bn1 = nn.BatchNorm2d(cout)
                self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
                self.bn2 = nn.BatchNorm2d(cout)
                self.down = nn.Sequential() if stride == 1 and cin == cout else \
                    nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

            def forward(self, x):
                y = torch.relu(self.bn1(self.conv1(x)))
                return torch.relu(self.bn2(self.conv2(y)) + self.down(x))

        layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        for cin, cout, stride in ((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)):
            layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        images = torch.randn(AUDIT_BATCH, 3, AUDIT_IMAGE, AUDIT_IMAGE)
        labels = torch.arange(AUDIT_BATCH) % 1000

        def step():
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(images), labels).backward()
            optimizer.step()

        return {"model": model, "optimizer": optimizer, "step": step, "batch": (images, labels)}
