"""PaddlePaddle adapter: the dygraph code a Paddle 3 user writes.

    loss = ((model(x) - t) ** 2).mean(); loss.backward(); opt.step(); opt.clear_grad()

"Default" clearing is plain `opt.clear_grad()`, whatever its default is in the installed version
(Paddle 3: set_to_zero=True). Linear weights are stored (in, out), the canonical layout. The
BatchNorm statistics `_mean` / `_variance` are parameters in Paddle (stop_gradient=True), so they
are part of `model.parameters()`. Freezing is `param.stop_gradient = True`; `param.trainable` is the
same flag seen from the other side (its setter sets stop_gradient = not trainable).
"""
from __future__ import annotations

import warnings

import numpy as np

with warnings.catch_warnings():  # paddle warns at import about ccache; not ours to report
    warnings.simplefilter("ignore")
    import paddle
# BatchNorm warns on every train-mode forward that it tracks running statistics: noise, not a finding
warnings.filterwarnings("ignore", message="When training, we now always track global mean and variance")

from .base import Runner, Unavailable, build_layers, frozen_params, hold
from ..schema import Model, Optimizer, param_names

ROLES = {"weight": "weight", "bias": "bias", "running_mean": "_mean", "running_var": "_variance"}


class PaddleRunner(Runner):
    framework = "paddle"
    devices = ("cpu", "cuda", "ascend")

    def __init__(self, device: str = "cpu", mode: str = "eager", api: str = "loop", backend: str | None = None):
        super().__init__(device, mode, api, backend)
        if device == "cuda":
            if not paddle.device.is_compiled_with_cuda():
                raise Unavailable(f"--device cuda: paddle {paddle.__version__} is a CPU build "
                                  f"(install paddlepaddle-gpu)")
            if paddle.device.cuda.device_count() == 0:
                raise Unavailable(f"--device cuda: paddle {paddle.__version__} sees no GPU")
            place = "gpu"
        elif device == "ascend":
            if "npu" not in paddle.device.get_all_custom_device_type():
                raise Unavailable(f"--device ascend: paddle {paddle.__version__} has no 'npu' custom device "
                                  f"(install the PaddleCustomDevice NPU plugin)")
            place = "npu"
        else:
            place = "cpu"
        paddle.set_device(place)

    @staticmethod
    def version() -> str:
        return str(paddle.__version__)

    def build(self, model: Model, values):
        paddle.seed(0)
        self.model = model
        def make(name, spec):
            if spec.linear:
                return paddle.nn.Linear(*spec.linear, bias_attr=None if spec.bias else False)
            # paddle's momentum weighs the old statistic: the opposite of the neutral one
            return paddle.nn.BatchNorm1D(spec.batchnorm, momentum=1.0 - spec.momentum, epsilon=spec.eps)

        self.layers = layers = build_layers(model, make)  # a tie is the same Layer object
        attributes, container = hold(model, layers, paddle.nn.LayerList, paddle.nn.LayerDict)
        net = paddle.nn.Layer()
        for name, layer in attributes.items():
            setattr(net, name, layer)
        if container is not None:
            net.blocks = container  # Layer.__setattr__ registers only Layers and Paddle containers
        self.net = net
        self.tensors = {name: getattr(layers[name.split(".")[0]], ROLES[name.split(".")[1]])
                        for name in param_names(model)}
        for name, tensor in self.tensors.items():
            tensor.set_value(np.asarray(values[name], dtype=np.float32))
        for name in frozen_params(model):
            self.tensors[name].stop_gradient = True
        self.names = {id(t): n for n, t in self.tensors.items()}

    def make_optimizer(self, optimizer: Optimizer):
        if optimizer.params == "default":
            params = self.net.parameters()
        elif optimizer.params == "all":
            params = self.net.parameters() + self.net.buffers()
        else:
            params = [self.tensors[n] for n in optimizer.params]
        for name, coeff in optimizer.regularizers.items():
            # what ParamAttr(regularizer=L2Decay(coeff)) sets; the docs say it wins over the optimizer's
            self.tensors[name].regularizer = paddle.regularizer.L2Decay(coeff)
        kw = dict(learning_rate=optimizer.lr, parameters=params)
        if optimizer.clip_global_norm is not None:
            kw["grad_clip"] = paddle.nn.ClipGradByGlobalNorm(clip_norm=optimizer.clip_global_norm)
        if optimizer.name != "adamw" and optimizer.weight_decay:
            kw["weight_decay"] = optimizer.weight_decay  # a float means L2Decay(weight_decay)
        if optimizer.name == "sgd":
            self.opt = paddle.optimizer.SGD(**kw)
        elif optimizer.name == "momentum":
            self.opt = paddle.optimizer.Momentum(momentum=optimizer.momentum, **kw)
        elif optimizer.name == "adam":
            self.opt = paddle.optimizer.Adam(beta1=optimizer.betas[0], beta2=optimizer.betas[1],
                                             epsilon=optimizer.eps, **kw)
        else:  # AdamW's weight_decay is the decoupled coefficient (default 0.01: always pass it)
            self.opt = paddle.optimizer.AdamW(beta1=optimizer.betas[0], beta2=optimizer.betas[1],
                                              epsilon=optimizer.eps, weight_decay=optimizer.weight_decay,
                                              **kw)

    def optimizer_params(self):
        return [self.names.get(id(p), "<unnamed tensor>") for p in self.opt._parameter_list]

    def forward(self, path, x, target, train, backward):
        if train:
            self.net.train()  # reaches only registered sublayers, as in user code
        else:
            self.net.eval()
        y = paddle.to_tensor(x)
        for name in path:
            y = self.layers[name](y)
            if name in self.model.detach_after:
                y = y.detach()
        loss = ((y - paddle.to_tensor(target)) ** 2).mean()
        if backward:
            loss.backward()
        return float(loss.item())

    def clear_grads(self, mode):
        if mode == "default":
            self.opt.clear_grad()
        else:
            self.opt.clear_grad(set_to_zero=(mode == "zeros"))

    def update(self):
        self.opt.step()  # global-norm clipping, if any, is the optimizer's grad_clip

    def grads(self):
        return {n: None if t.grad is None else t.grad.numpy().astype(np.float64)
                for n, t in self.tensors.items()}

    def values(self):
        return {n: t.numpy().astype(np.float64) for n, t in self.tensors.items()}

    def trainable(self):
        return {n: bool(t.trainable) for n, t in self.tensors.items()}
