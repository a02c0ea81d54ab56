"""MindSpore, PyNative with blocking launch (common.MINDSPORE_BLOCKING):
grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters); optimizer(grads)"""
from ..common import (AUDIT_BATCH, AUDIT_IMAGE, LR, MINDSPORE_BLOCKING, N_LAYERS, THREADS, WEIGHT_DECAY, WIDTH,
                      batch, layer_weights)
from . import Case


class MindSporeCase(Case):
    """grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters);
    loss, grads = grad_fn(x, t); optimizer(grads)   (PyNative, the parameters in a Cell)"""

    framework = "mindspore"
    modules = ("mindspore",)

    def __init__(self, mask, fraction, optimizer):
        super().__init__(mask, fraction, optimizer)
        import mindspore as ms
        from mindspore import nn, ops
        self.ms, self.ops = ms, ops
        target = "GPU" if self.device == "cuda" else "CPU"
        if not ms.hal.is_available(target):
            raise NotImplementedError(f"CONFORMANCE_BENCH_DEVICE={self.device}: mindspore {ms.__version__} has "
                                      f"no {target} backend here")
        ms.set_context(mode=ms.PYNATIVE_MODE)
        ms.set_device(target)
        from mindspore._c_expression import RuntimeConf
        conf = RuntimeConf.get_instance()
        if not conf.is_op_threads_num_configured():
            ms.device_context.cpu.op_tuning.threads_num(THREADS)  # the CPU kernel pool (KernelThread_*)
        if MINDSPORE_BLOCKING and not conf.is_launch_blocking():
            # PyNative's default pipeline runs each op through three queue threads (frontend, bprop,
            # backend) that together keep ~2 cores busy for one step's work; blocking launch runs
            # it on the Python thread plus the one kernel thread
            ms.runtime.launch_blocking()
        try:
            from mindspore.graph.api import _pynative_executor  # 2.7+
        except ImportError:
            from mindspore.common.api import _pynative_executor
        self.executor = _pynative_executor  # what mindspore.train.Model's step sync calls

        class Stack(nn.Cell):
            def __init__(self, layers):
                super().__init__()
                self.layers = nn.CellList(layers)

        layers = []
        for kernel, bias in layer_weights():
            layer = nn.Dense(WIDTH, WIDTH)
            layer.weight.set_data(ms.Tensor(kernel.T.copy()))  # mindspore keeps (out, in)
            layer.bias.set_data(ms.Tensor(bias))
            layers.append(layer)
        self.net = Stack(layers)
        if mask == "frozen":
            for layer in layers[:self.k]:
                for p in layer.get_parameters():
                    p.requires_grad = False
        params = self.net.trainable_params()  # the MindSpore idiom: frozen ones left out
        if optimizer == "sgd_wd":
            self.opt = nn.SGD(params, learning_rate=LR[optimizer], weight_decay=WEIGHT_DECAY)
        else:
            self.opt = nn.AdamWeightDecay(params, learning_rate=LR[optimizer], weight_decay=WEIGHT_DECAY)
        masked = {id(p) for layer in layers[:self.k] for p in layer.get_parameters()}
        self.masked = [i for i, p in enumerate(self.opt.parameters) if id(p) in masked]
        start, cut, cells = self.start, self.cut, layers

        def forward_fn(x, t):
            y = x
            for i in range(start, N_LAYERS):
                y = ops.tanh(cells[i](y))
                if i == cut:
                    y = ops.stop_gradient(y)
            return ((y - t) ** 2).mean()

        self.grad_fn = ms.value_and_grad(forward_fn, None, self.opt.parameters)
        x, t = batch()
        self.x, self.t = ms.Tensor(x), ms.Tensor(t)
        self.net.set_train(True)
        if optimizer == "adamw":
            # MindSpore 2.7.2's AdamWeightDecay (PyNative) runs steps 6 to 15 of every new model
            # about 2.5x slower than the steps before and after them (measured: not a matter of
            # time, and not on 2.10.0 or with SGD); a model is timed past them
            self.warmup_steps = 16
        self.warm_up()

    def sync(self):
        self.executor.sync()  # PyNative may run ahead of Python, on CPU too

    def train_step(self):
        # no clearing call: each grad_fn call returns a fresh tuple
        loss, grads = self.grad_fn(self.x, self.t)
        if self.zero:
            grads = list(grads)
            for i in self.masked:
                grads[i] = grads[i] * 0
            grads = tuple(grads)
        self.grads = grads
        self.opt(grads)
        self.sync()

    def optimizer_step(self):
        self.opt(self.grads)
        self.sync()

    @staticmethod
    def audit_target():
        """ResNet-18 written out in PyNative Cells (MindSpore ships none without mindcv): Momentum with
        weight decay, grad_fn = value_and_grad(forward, None, optimizer.parameters); optimizer(grads)"""
        import numpy as np
        import mindspore as ms
        from mindspore import nn, ops
        ms.set_context(mode=ms.PYNATIVE_MODE)
        ms.set_device("CPU")
        ms.set_seed(0)

        class Basic(nn.Cell):
            def __init__(self, cin, cout, stride):
                super().__init__()
                self.conv1 = nn.Conv2d(cin, cout, 3, stride, pad_mode="pad", padding=1)
                self.bn1 = nn.BatchNorm2d(cout)
                self.conv2 = nn.Conv2d(cout, cout, 3, 1, pad_mode="pad", padding=1)
                self.bn2 = nn.BatchNorm2d(cout)
                self.down = None if stride == 1 and cin == cout else \
                    nn.SequentialCell(nn.Conv2d(cin, cout, 1, stride), nn.BatchNorm2d(cout))

            def construct(self, x):
                y = ops.relu(self.bn1(self.conv1(x)))
                return ops.relu(self.bn2(self.conv2(y)) + (x if self.down is None else self.down(x)))

        class ResNet18(nn.Cell):
            def __init__(self):
                super().__init__()
                blocks = [nn.Conv2d(3, 64, 7, 2, pad_mode="pad", padding=3), nn.BatchNorm2d(64), nn.ReLU(),
                          nn.MaxPool2d(3, 2, pad_mode="same")]
                for cin, cout, stride in ((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)):
                    blocks += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
                self.features = nn.SequentialCell(blocks)
                self.head = nn.Dense(512, 1000)

            def construct(self, x):
                return self.head(self.features(x).mean(axis=(2, 3)))

        model = ResNet18()
        model.set_train(True)
        optimizer = nn.Momentum(model.trainable_params(), learning_rate=0.1, momentum=0.9, weight_decay=1e-4)
        images = ms.Tensor(np.random.default_rng(0).standard_normal(
            (AUDIT_BATCH, 3, AUDIT_IMAGE, AUDIT_IMAGE), dtype=np.float32))
        labels = ms.Tensor(np.arange(AUDIT_BATCH, dtype=np.int32) % 1000)
        loss_fn = nn.CrossEntropyLoss()

        def forward(x, y):
            return loss_fn(model(x), y)

        grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)

        def step():
            _, grads = grad_fn(images, labels)
            optimizer(grads)

        return {"model": model, "optimizer": optimizer, "step": step}
