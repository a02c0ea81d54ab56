"""paddle, eager (dygraph): loss.backward(); opt.step(); opt.clear_grad()"""
from ..common import AUDIT_BATCH, AUDIT_IMAGE, LR, N_LAYERS, THREADS, WEIGHT_DECAY, WIDTH, batch, layer_weights
from . import Case


class PaddleCase(Case):
    """loss.backward(); opt.step(); opt.clear_grad() -- timed from clear_grad on, one turn of the
    same loop, so the step's gradients are still there afterwards."""

    framework = "paddle"
    modules = ("paddle",)

    def __init__(self, mask, fraction, optimizer):
        super().__init__(mask, fraction, optimizer)
        import paddle
        self.paddle = paddle
        if self.device == "cuda":
            if not (paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0):
                raise NotImplementedError(f"CONFORMANCE_BENCH_DEVICE=cuda: paddle {paddle.__version__} has "
                                          "no CUDA device (a CPU build, or no GPU visible)")
            paddle.set_device("gpu")
        else:
            paddle.set_device("cpu")
        paddle.base.core.set_num_threads(THREADS)
        layers = paddle.nn.LayerList()
        for kernel, bias in layer_weights():
            layer = paddle.nn.Linear(WIDTH, WIDTH)  # paddle keeps (in, out)
            layer.weight.set_value(kernel)
            layer.bias.set_value(bias)
            layers.append(layer)
        self.layers = layers
        if mask == "frozen":
            for layer in self.layers[:self.k]:
                for p in layer.parameters():
                    p.stop_gradient = True
        params = self.layers.parameters()  # frozen ones included, as users hand them over
        if optimizer == "sgd_wd":  # a float weight_decay is coupled L2Decay
            self.opt = paddle.optimizer.SGD(learning_rate=LR[optimizer], parameters=params,
                                            weight_decay=WEIGHT_DECAY)
        else:
            self.opt = paddle.optimizer.AdamW(learning_rate=LR[optimizer], parameters=params,
                                              weight_decay=WEIGHT_DECAY)
        self.masked = [p for layer in self.layers[:self.k] for p in layer.parameters()]
        x, t = batch()
        self.x, self.t = paddle.to_tensor(x), paddle.to_tensor(t)
        self.warm_up()

    def sync(self):
        if self.device == "cuda":
            self.paddle.device.synchronize()

    def train_step(self):
        paddle = self.paddle
        self.opt.clear_grad()  # the default: set_to_zero=True
        y = self.x
        for i in range(self.start, N_LAYERS):
            y = paddle.tanh(self.layers[i](y))
            if i == self.cut:
                y = y.detach()
        loss = ((y - self.t) ** 2).mean()
        loss.backward()
        if self.zero:
            with paddle.no_grad():  # in place on a gradient needs no_grad in paddle
                for p in self.masked:
                    p.grad.scale_(0.0)
        self.opt.step()
        self.sync()

    def optimizer_step(self):
        self.opt.step()
        self.sync()

    @staticmethod
    def audit_target():
        """paddle.vision's ResNet-18: Momentum with L2 decay, loss.backward(); opt.step(); opt.clear_grad()"""
        import paddle
        paddle.set_device("cpu")
        paddle.base.core.set_num_threads(THREADS)
        paddle.seed(0)
        model = paddle.vision.models.resnet18(num_classes=1000)
        optimizer = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9, weight_decay=1e-4,
                                              parameters=model.parameters())
        images = paddle.randn([AUDIT_BATCH, 3, AUDIT_IMAGE, AUDIT_IMAGE])
        labels = paddle.arange(AUDIT_BATCH) % 1000

        def step():
            loss = paddle.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()

        return {"model": model, "optimizer": optimizer, "step": step}
