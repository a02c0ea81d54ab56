"""What the paddle room's two adapters share: runner.py's PaddleRunner (the dygraph loop, also under
to_static and in hapi's trainer) and graph.py's StaticRunner (the static program). Both build the same
layers as a user writes them, the same optimizer and loss objects, read the settings left to default the
same way, and run on the device PaddleBase sets; the rest of each is its own.

Linear weights are stored (in, out), the canonical layout. The BatchNorm statistics `_mean` / `_variance`
are parameters in Paddle (stop_gradient=True), so they are part of `model.parameters()`. A setting the case
leaves to "default" is left out of the constructor; read_defaults reads back what the built layer or
optimizer holds.
"""
from __future__ import annotations

import functools
import warnings

with warnings.catch_warnings():  # paddle warns at import about ccache; not ours to report
    warnings.simplefilter("ignore")
    import paddle
# BatchNorm warns on every train-mode forward that it tracks running statistics: noise, not a finding
warnings.filterwarnings("ignore", message="When training, we now always track global mean and variance")

from . import OFFERS
from ..base import Runner, Unavailable, build_layers, given_loss, hold
from ...spec import DROPOUT_PROBE, PADDING_PROBE, CrossEntropy, Model, Optimizer, defaults_of, padding_from
from ...spec import layers as layer_kinds

# canonical role -> the paddle attribute holding it; BatchNorm(name=n) names its statistics
# n_mean / n_variance in a static program (graph.py)
ROLES = {"weight": "weight", "bias": "bias", "running_mean": "_mean", "running_var": "_variance"}


class PaddleBase(Runner):
    """What every run of the room has: the framework, its offers and features, and the device."""
    framework = "paddle"
    offers = OFFERS
    # listed by name: a feature the engine adds later stays unsupported until the adapter expresses it
    features = frozenset({"defaults", "layernorm", "freeze-steps", "lr-schedule", "no-decay", "no-decay-names", "no-decay-ndim",
                          "init-default", "per-sample-loss", "clip-norm", "no-clip", "embedding", "conv2d",
                          "dropout", "cross-entropy", "positional-args", "data-parallel", "touch",
                          "no-sync", "sync-batchnorm"})

    def __init__(self, run=None, **axes):
        super().__init__(run, **axes)
        if self.device == "cuda":
            if not paddle.device.is_compiled_with_cuda():
                raise Unavailable(f"--device cuda: paddle {paddle.__version__} is a CPU build "
                                  f"(install paddlepaddle-gpu)")
            if paddle.device.cuda.device_count() == 0:
                raise Unavailable(f"--device cuda: paddle {paddle.__version__} sees no GPU")
            place = "gpu"
        elif self.device == "ascend":
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


class _Net(paddle.nn.Layer):
    """The user's model: its layers are attributes or in a container (registered or not, as the case
    says); forward runs the layers of the step's path, the one model a trainer is given."""

    def forward(self, x):
        return self.run_path(x)


def make_layers(model: Model, attrs=None):
    """Every layer and the net holding them as model.container says. `attrs(name, role)` gives the
    ParamAttr of a parameter (static programs share parameters across programs by name)."""
    images = layer_kinds.image_batchnorms(model)

    def make(name, spec):
        a = (lambda role: None) if attrs is None else functools.partial(attrs, name)
        # bias "default": bias_attr left out (a static program then names the bias itself)
        bias = {} if spec.bias == "default" else {"bias_attr": a("bias") if spec.bias else False}
        if spec.linear:
            return paddle.nn.Linear(*spec.linear, weight_attr=a("weight"), **bias)
        if spec.conv2d:  # NCHW input, weight (out, in, kh, kw): the canonical layout
            c_in, c_out, k = spec.conv2d
            padding = {} if spec.padding == "default" else {"padding": k // 2}
            return paddle.nn.Conv2D(c_in, c_out, k, stride=1, weight_attr=a("weight"), **padding, **bias)
        if spec.embedding:  # the default constructor: sparse=False, a dense gradient
            return paddle.nn.Embedding(*spec.embedding, padding_idx=spec.padding_idx, weight_attr=a("weight"))
        if spec.dropout:  # mode "upscale_in_train" by default: the reference's scaling
            # positional: Dropout(0.1), as ported code writes it
            return paddle.nn.Dropout(spec.dropout) if spec.positional else paddle.nn.Dropout(p=spec.dropout)
        kw = {} if spec.eps == "default" else {"epsilon": spec.eps}  # "default": left out
        if spec.layernorm:
            return paddle.nn.LayerNorm(spec.layernorm, weight_attr=a("weight"), bias_attr=a("bias"), **kw)
        # paddle's momentum weighs the old statistic: the opposite of the neutral one; `name`
        # names the statistics name_mean / name_variance in a static program
        if spec.momentum != "default":
            kw["momentum"] = 1.0 - spec.momentum
        # BatchNorm2D after a conv (per channel over N, H, W), BatchNorm1D on features
        kind = paddle.nn.BatchNorm2D if name in images else paddle.nn.BatchNorm1D
        if spec.synchronized:  # statistics over every replica's rows, images or vectors
            kind = paddle.nn.SyncBatchNorm
        return kind(spec.batchnorm, weight_attr=a("weight"), bias_attr=a("bias"),
                    name=None if attrs is None else name, **kw)

    layers = build_layers(model, make)  # a tie is the same Layer object
    attributes, container = hold(model, layers, paddle.nn.LayerList, paddle.nn.LayerDict)
    net = _Net()
    for name, layer in attributes.items():
        setattr(net, name, layer)
    if container is not None:
        net.blocks = container  # Layer.__setattr__ registers only Layers and Paddle containers
    return layers, net


def run_path(model: Model, layers: dict, path, x):
    """The step's path, layer after layer, as a user writes it (a dygraph tensor or a static variable)."""
    y, flatten = x, layer_kinds.flatten_before(model, path)
    for i, name in enumerate(path):
        # what a user writes before a Linear that takes an image: paddle.flatten(x, 1), channels first
        y = layers[name](paddle.flatten(y, 1) if i in flatten else y)
        if name in model.detach_after:
            y = y.detach()
    return y


def criterion(loss: CrossEntropy):
    """The paddle loss object a user writes for the case's cross-entropy: paddle.nn.CrossEntropyLoss with the
    settings the case writes out (paddle's from_logits is use_softmax), the others left out."""
    kw = {"use_softmax" if k == "from_logits" else k: v for k, v in given_loss(loss).items()}
    return paddle.nn.CrossEntropyLoss(**kw)


def loss_of(y, t, reduce=True, loss: CrossEntropy | None = None):
    """The case's loss of the output y against t: its cross-entropy (class scores against int64 labels), or
    mean((y - t) ** 2), per sample (a vector) where not `reduce`."""
    if loss is not None:
        return criterion(loss)(y, t)
    squared = (y - t) ** 2
    return squared.mean() if reduce else squared.flatten(1).mean(1)


def new_optimizer(optimizer: Optimizer, parameters, no_decay=frozenset()):
    """The paddle optimizer a user writes for `optimizer` over `parameters` (the static program's
    minimize() makes one per program too); `no_decay`: the names (Tensor.name) of the
    parameters excluded from weight decay. A setting left to "default" is left out. AdamW with
    no_decay_names: the user's filter is apply_decay_param_fun itself, on the name it is handed."""
    kw = dict(parameters=parameters)
    if optimizer.lr != "default":
        kw["learning_rate"] = optimizer.lr
    if optimizer.clip_global_norm is not None:
        kw["grad_clip"] = paddle.nn.ClipGradByGlobalNorm(clip_norm=optimizer.clip_global_norm)
    if optimizer.clip_norm is not None:
        kw["grad_clip"] = paddle.nn.ClipGradByNorm(clip_norm=optimizer.clip_norm)  # each gradient alone
    if optimizer.weight_decay != "default" and (optimizer.name == "adamw" or optimizer.weight_decay):
        # a float: L2Decay(weight_decay) for sgd/momentum/adam, the decoupled coefficient for AdamW
        kw["weight_decay"] = optimizer.weight_decay
    if optimizer.name in ("adam", "adamw"):
        if optimizer.betas != "default":
            kw["beta1"], kw["beta2"] = optimizer.betas
        if optimizer.eps != "default":
            kw["epsilon"] = optimizer.eps
    if optimizer.name == "momentum" and optimizer.momentum != "default":
        kw["momentum"] = optimizer.momentum
    if optimizer.no_decay_names and optimizer.name == "adamw":
        kw["apply_decay_param_fun"] = lambda name: not any(part in name for part in optimizer.no_decay_names)
    elif no_decay:
        if optimizer.name == "adamw":  # the docs' way: a predicate on the parameter's name
            kw["apply_decay_param_fun"] = lambda name: name not in no_decay
        else:  # parameter groups, the excluded ones with weight_decay 0 (graph.py's static program refuses them)
            groups = [{"params": [p for p in parameters if p.name not in no_decay]},
                      {"params": [p for p in parameters if p.name in no_decay], "weight_decay": 0.0}]
            kw["parameters"] = [g for g in groups if g["params"]]
    return {"sgd": paddle.optimizer.SGD, "momentum": paddle.optimizer.Momentum,
            "adam": paddle.optimizer.Adam, "adamw": paddle.optimizer.AdamW}[optimizer.name](**kw)


def dropout_rate(layer) -> float:
    """Dygraph: the fraction of DROPOUT_PROBE ones the dropout layer zeroes when called in train mode."""
    was = layer.training
    layer.train()
    zeroed = float((layer(paddle.ones([DROPOUT_PROBE])) == 0).astype("float64").mean())
    layer.training = was
    return zeroed


def conv_sides(model: Model, layers: dict) -> dict[str, int]:
    """Dygraph: the side of each padding-default conv's output on a PADDING_PROBE image of ones."""
    with paddle.no_grad():
        return {name: layers[name](paddle.ones([1, spec.conv2d[0], PADDING_PROBE, PADDING_PROBE])).shape[-1]
                for name, spec in model.layers.items() if spec.padding == "default"}


def read_defaults(model: Model, optimizer: Optimizer, layers: dict, opt, rate=dropout_rate,
                  sides=None) -> dict[str, object]:
    """What the built layers and optimizer hold for each setting left to "default", in the spec's
    convention (BatchNorm momentum: the new batch's weight, 1 - paddle's momentum; a bias: whether the layer
    holds one); a positional dropout's `rate`, measured by `rate(layer)`; a conv's `padding`, from the side of
    its output on a PADDING_PROBE image (`sides`, measured by conv_sides where not given)."""
    sides = conv_sides(model, layers) if sides is None else sides
    out = {}
    for name in defaults_of(model, optimizer):
        owner, field = name.split(".")
        if owner != "optimizer":
            layer = layers[owner]
            if field == "bias":
                out[name] = layer.bias is not None
            elif field == "rate":
                out[name] = rate(layer)
            elif field == "padding":
                out[name] = padding_from(sides[owner], model.layers[owner].conv2d[2])
            else:
                out[name] = 1.0 - float(layer._momentum) if field == "momentum" else float(layer._epsilon)
        elif field == "lr":
            out[name] = float(opt._learning_rate)
        elif field == "weight_decay":
            if optimizer.name == "adamw":
                out[name] = float(opt._weight_decay)
            else:  # L2Decay(coeff) or None; Momentum moves it into its fused update
                reg = opt.regularization
                out[name] = float(reg._coeff) if reg is not None else float(getattr(opt, "_regularization_coeff", 0.0))
        elif field == "momentum":
            out[name] = float(opt._momentum)
        elif field == "betas":
            out[name] = [float(opt._beta1), float(opt._beta2)]
        else:
            out[name] = float(opt._epsilon)
    return out
