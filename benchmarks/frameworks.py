"""One training setup per framework, written the way that framework's users write it.

Every case is the same model -- N_LAYERS equal WIDTH x WIDTH Linear/Dense layers with tanh after
each, the same fixed-seed weights and batch, mean squared error -- with the first
`masked_layers(fraction)` layers masked out of the update in one of four ways:

    frozen         requires_grad=False / stop_gradient=True / trainable=False on their parameters;
                   the optimizer still gets what users hand it (model.parameters(), or the
                   framework's trainable collection where that is the idiom)
    unused         those layers are skipped in the forward pass: no gradient reaches them
    zero_grad      every layer runs; their gradients are multiplied by zero before the update
    stop_gradient  every layer runs; the activation after the masked prefix is detached

`train_step()` is one turn of the user's loop (forward, backward, update, clearing the
framework's default way) and leaves that step's gradients in place, so `optimizer_step()` can time
the update alone. Both synchronise the device before returning. Frameworks are imported only when
a case is built, so a process that never builds one (a skipped parameter combination) pays for
none (see `_preimport` for asv's fork server).

Execution: torch and paddle eager; MindSpore PyNative with blocking launch (common.MINDSPORE_BLOCKING);
TensorFlow with the step in tf.function (common.TF_FUNCTION), as TF's custom-loop guide writes it.
"""
import importlib
import importlib.util
import os
import sys
import warnings

from .common import (LR, MINDSPORE_BLOCKING, N_LAYERS, TF_FUNCTION, THREADS, WEIGHT_DECAY, WIDTH,
                     WARMUP_STEPS, batch, device, layer_weights, masked_layers)

FRAMEWORKS = ("torch", "paddle", "mindspore", "tensorflow")
MASKS = ("frozen", "unused", "zero_grad", "stop_gradient")
OPTIMIZERS = ("sgd_wd", "adamw")
MODULES = {"torch": ("torch",), "paddle": ("paddle",), "mindspore": ("mindspore",),
           "tensorflow": ("tensorflow", "keras")}


class Case:
    """The shared part: which layers are masked and how."""

    def __init__(self, mask, fraction, optimizer):
        if mask not in MASKS:
            raise NotImplementedError(f"unknown mask {mask!r}")
        if optimizer not in OPTIMIZERS:
            raise NotImplementedError(f"unknown optimizer {optimizer!r}")
        self.mask, self.fraction, self.optimizer = mask, fraction, optimizer
        self.k = masked_layers(fraction)
        self.start = self.k if mask == "unused" else 0            # first layer run in forward
        self.cut = self.k - 1 if mask == "stop_gradient" else -1  # detach after this layer
        self.zero = mask == "zero_grad" and self.k > 0
        self.device = device()

    def warm_up(self):
        for _ in range(WARMUP_STEPS):  # lazy optimizer state, first-call caches
            self.train_step()

    def ready_update(self):
        """Whatever optimizer_step needs beyond a built case (the step's gradients are there)."""


class TorchCase(Case):
    """opt.zero_grad(); loss.backward(); opt.step()"""

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


class PaddleCase(Case):
    """loss.backward(); opt.step(); opt.clear_grad() -- timed from clear_grad on, one turn of the
    same loop, so the step's gradients are still there afterwards."""

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


class MindSporeCase(Case):
    """grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters);
    loss, grads = grad_fn(x, t); optimizer(grads)   (PyNative, the parameters in a Cell)"""

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


class TensorFlowCase(Case):
    """with tf.GradientTape() as tape: loss = ...; grads = tape.gradient(loss, model.trainable_variables);
    optimizer.apply_gradients(zip(grads, model.trainable_variables))   (in tf.function, Keras 3 layers)"""

    def __init__(self, mask, fraction, optimizer):
        super().__init__(mask, fraction, optimizer)
        import tensorflow as tf
        import keras
        self.tf = tf
        try:
            tf.config.threading.set_intra_op_parallelism_threads(THREADS)
            tf.config.threading.set_inter_op_parallelism_threads(THREADS)
        except RuntimeError:
            pass  # the runtime is already up in this process (a second case): set by then
        gpus = tf.config.list_physical_devices("GPU")
        if self.device == "cuda" and not gpus:
            raise NotImplementedError(f"CONFORMANCE_BENCH_DEVICE=cuda: tensorflow {tf.__version__} sees no GPU")
        self.tf_device = "/GPU:0" if self.device == "cuda" else "/CPU:0"
        # Keras drops (None, variable) pairs -- the unused and stop_gradient layers -- and warns
        # "Gradients do not exist for variables" each step; the dropping is the point here
        warnings.filterwarnings("ignore", message="Gradients do not exist")
        start, cut = self.start, self.cut

        class Stack(keras.Model):
            def __init__(self):
                super().__init__()
                self.blocks = [keras.layers.Dense(WIDTH, activation="tanh") for _ in range(N_LAYERS)]

            def call(self, y):
                for i in range(start, N_LAYERS):
                    y = self.blocks[i](y)
                    if i == cut:
                        y = tf.stop_gradient(y)
                return y

        with tf.device(self.tf_device):
            self.net = Stack()
            for layer, (kernel, bias) in zip(self.net.blocks, layer_weights()):
                layer.build((None, WIDTH))
                layer.set_weights([kernel, bias])  # keras keeps (in, out)
            if mask == "frozen":
                for layer in self.net.blocks[:self.k]:
                    layer.trainable = False
            self.variables = self.net.trainable_variables  # the Keras idiom: frozen ones left out
            if optimizer == "sgd_wd":  # Keras' weight_decay is decoupled in every optimizer
                self.opt = keras.optimizers.SGD(learning_rate=LR[optimizer], weight_decay=WEIGHT_DECAY)
            else:
                self.opt = keras.optimizers.AdamW(learning_rate=LR[optimizer], weight_decay=WEIGHT_DECAY)
            self.opt.build(self.variables)  # slot variables now, not inside the first trace
            masked = {id(v) for layer in self.net.blocks[:self.k] for v in layer.weights}
            self.masked = [i for i, v in enumerate(self.variables) if id(v) in masked]
            x, t = batch()
            self.x, self.t = tf.constant(x), tf.constant(t)
        # the custom loop as TF's guide writes it for speed: the step inside tf.function (traced
        # once here, in warm_up); CONFORMANCE_BENCH_TF_FUNCTION=0 runs it eagerly instead
        self.step_fn = tf.function(self._step) if TF_FUNCTION else self._step
        self.apply_fn = tf.function(self._apply) if TF_FUNCTION else self._apply
        self.warm_up()
        self.update_traced = False

    def ready_update(self):
        if not self.update_traced:  # trace apply_fn (~2 s for AdamW) only where it is timed
            self.optimizer_step()
            self.update_traced = True

    def sync(self):
        if self.device == "cuda":
            self.tf.test.experimental.sync_devices()

    def _step(self, x, t):
        tf = self.tf
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self.net(x, training=True) - t))
        grads = tape.gradient(loss, self.variables)  # None where a variable got no gradient
        if self.zero:
            for i in self.masked:
                grads[i] = grads[i] * 0
        self.opt.apply_gradients(zip(grads, self.variables))
        return grads

    def _apply(self, grads):
        self.opt.apply_gradients(zip(grads, self.variables))

    def train_step(self):
        with self.tf.device(self.tf_device):
            self.grads = self.step_fn(self.x, self.t)
        self.sync()

    def optimizer_step(self):
        with self.tf.device(self.tf_device):
            self.apply_fn(self.grads)
        self.sync()


CASES = {"torch": TorchCase, "paddle": PaddleCase, "mindspore": MindSporeCase, "tensorflow": TensorFlowCase}
_built = {}


def available(framework):
    """Whether `framework` is importable here (without importing it)."""
    return importlib.util.find_spec(MODULES[framework][0]) is not None


def case(framework, mask, fraction, optimizer, tag=""):
    """The case for these parameters, built once per process (asv re-runs `setup` before every
    timed call; the model, its optimizer state and its warm-up are kept across those calls).
    NotImplementedError (a skip) when the framework is not installed in the environment asv runs in;
    RuntimeError (a failure) instead when CONFORMANCE_BENCH_REQUIRE (comma-separated) names it."""
    if framework not in CASES:
        raise NotImplementedError(f"unknown framework {framework!r}")
    if not available(framework):
        if framework in os.environ.get("CONFORMANCE_BENCH_REQUIRE", "").split(","):
            raise RuntimeError(f"CONFORMANCE_BENCH_REQUIRE={os.environ['CONFORMANCE_BENCH_REQUIRE']}: "
                               f"{framework} is not importable in this environment")
        raise NotImplementedError(f"{framework} is not installed in this environment")
    key = (framework, mask, fraction, optimizer, tag)
    if key not in _built:
        _built[key] = CASES[framework](mask, fraction, optimizer)
    return _built[key]


def _preimport():
    """Import the installed framework in asv's fork server, once.

    With launch_method "forkserver" asv imports the suite in one server process and forks a
    process per benchmark and parameter combination, so a framework imported here is paid for
    once instead of in each of them (1-3 s apiece). With "spawn" every process imports the suite,
    skipped combinations included, so nothing is imported there. None of the four frameworks
    starts a thread on import, which keeps the fork safe. CONFORMANCE_BENCH_PREIMPORT=0 turns
    this off."""
    if sys.argv[1:2] != ["run_server"] or os.environ.get("CONFORMANCE_BENCH_PREIMPORT", "1") == "0":
        return
    for framework in FRAMEWORKS:
        if available(framework):
            try:
                for module in MODULES[framework]:
                    importlib.import_module(module)
            except Exception:  # noqa: BLE001 - the benchmark's own setup reports the real error
                pass


_preimport()
