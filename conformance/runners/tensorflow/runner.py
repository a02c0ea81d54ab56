"""TensorFlow/Keras adapter: the custom training loop a TF2 user writes (Keras 3 layers), and Keras'
own trainer (compile + fit).

    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - t)) + sum(model.losses)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))

The model is a `keras.Model` subclass whose sublayers are assigned as attributes in `__init__`
(or held in a list / dict / tuple attribute, which Keras tracks itself). Dense kernels are already
(in, out). Keras' BatchNormalization momentum weighs the old statistic: neutral m -> 1 - m.

Gradients are functional: nothing is stored on a variable, so there is no clearing call. "Default"
and "none" clearing are the default `tape.gradient` (UnconnectedGradients.NONE: None where a
variable is not connected to the loss); "zeros" is `unconnected_gradients=UnconnectedGradients.ZERO`.
A backward pass without clearing in between (accumulation) is Unsupported: TF has no gradient to
accumulate into. The optimizer gets `weight_decay` as its own argument (decoupled in every Keras
optimizer); a per-parameter coefficient c becomes that variable's `keras.regularizers.L2(c / 2)`
(loss c/2 * sum(w**2), gradient c * w), the Keras per-weight regularizer, added to `model.losses`.

--mode graph wraps the loop's step and update in tf.function (backend label "tf.function"): graph.py.
--api trainer is Keras' own trainer, compile + fit per step: trainer.py.
"""
from __future__ import annotations

import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's C++ INFO/WARNING logs; before the import


def _import_quietly():
    """Import tensorflow with the C++ lines it writes straight to fd 2 while loading hidden.

    TF 2.21 prints the oneDNN notice through absl before absl's log level applies, so
    TF_CPP_MIN_LOG_LEVEL cannot silence it; Python errors from the import still propagate.
    """
    import sys
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            import tensorflow
            import keras
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return tensorflow, keras


tf, keras = _import_quietly()
# TF <= 2.15 ships Keras 2: weights are plain tf.Variables (trainable fixed at creation, no
# `.regularizer`, no `.value` property) and an unbuilt Sequential hides its variables. The few places
# that differ test KERAS2; everything else is the same code on both.
KERAS2 = keras.__version__.startswith("2.")

import numpy as np  # noqa: E402

from ..base import Runner, Unavailable, Unsupported, build_layers, hold  # noqa: E402
from ...schema import Model, Optimizer, param_names  # noqa: E402
# graph.py and trainer.py import tensorflow and keras themselves: after the quiet import above
from . import graph  # noqa: E402
from .trainer import KerasTrainer  # noqa: E402

LINEAR_ROLES = {"weight": "kernel", "bias": "bias"}
BATCHNORM_ROLES = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean",
                   "running_var": "moving_variance"}


class Net(keras.Model):
    """A model as a Keras user subclasses it: sublayers assigned as attributes in __init__, some of
    them kept together in `self.blocks` (a list, dict, tuple or keras.Sequential)."""

    def __init__(self, attributes: dict, blocks=None, where: dict | None = None, detach_after=()):
        super().__init__()
        for name, layer in attributes.items():
            setattr(self, name, layer)
        if blocks is not None:
            self.blocks = blocks
        self.where = tuple((where or {}).items())  # layer name -> key into self.blocks (strings/ints only)
        self.detach_after = tuple(detach_after)
        # the sublayers are built (and their weights loaded) before the first call; Keras 2
        # (TF <= 2.15) refuses model.trainable_variables on a model not marked built
        self.built = True

    def build(self, input_shape):
        # the sublayers are built (and their weights loaded) before the first call
        self.built = True

    def _layer(self, name):
        for layer_name, key in self.where:
            if layer_name == name:
                blocks = self.blocks.layers if isinstance(self.blocks, keras.Sequential) else self.blocks
                return blocks[key]
        return getattr(self, name)

    def call(self, x, path):
        # `training` is not passed on by hand: Keras propagates the outer call's `training`
        # to the layers called inside `call`, whatever holds them.
        for name in path:
            x = self._layer(name)(x)
            if name in self.detach_after:
                x = tf.stop_gradient(x)
        return x


class TensorFlowRunner(KerasTrainer, Runner):
    framework = "tensorflow"
    devices = ("cpu", "cuda", "ascend")
    modes = ("eager", "graph")
    apis = ("loop", "trainer")
    backends = ("tf.function",)  # what compiles the loop's step, and fit's train function, in graph mode

    def __init__(self, device: str = "cpu", mode: str = "eager", api: str = "loop", backend: str | None = None):
        super().__init__(device, mode, api, backend)
        if device == "cuda":
            if not tf.config.list_physical_devices("GPU"):
                raise Unavailable(f"--device cuda: tensorflow {tf.__version__} sees no GPU "
                                  f"(tf.config.list_physical_devices('GPU') is empty; "
                                  f"install tensorflow[and-cuda] on a CUDA machine)")
            self.tf_device = "/GPU:0"
        elif device == "ascend":
            raise Unavailable(f"--device ascend: tensorflow {tf.__version__} has no Ascend device")
        else:
            self.tf_device = "/CPU:0"
        # Keras drops (None, variable) pairs with a "Gradients do not exist" warning (Keras 2 logs it
        # through TF's logger): observed and reported by the tests, kept out of the progress output
        tf.get_logger().addFilter(lambda record: "Gradients do not exist" not in record.getMessage())
        if mode == "graph":
            graph.quiet_retracing()

    @staticmethod
    def version() -> str:
        return str(tf.__version__)

    # ------------------------------------------------------------ model
    def build(self, model: Model, values):
        if model.container == "framework_dict":
            raise Unsupported("Keras has no dict container class; a plain dict attribute is Keras' "
                              "own tracked container (plain_dict)")
        keras.utils.set_random_seed(0)
        self.model = model
        with tf.device(self.tf_device):
            def make(name, spec):
                if spec.linear:
                    layer = keras.layers.Dense(spec.linear[1], use_bias=spec.bias, name=name)
                    layer.build((None, spec.linear[0]))
                else:  # Keras' momentum weighs the old statistic: the opposite of the neutral one
                    layer = keras.layers.BatchNormalization(momentum=1.0 - spec.momentum, epsilon=spec.eps,
                                                            name=name)
                    layer.build((None, spec.batchnorm))
                return layer

            layers = build_layers(model, make)  # a tie is the same layer object
            # Keras has no dict container class: a plain dict attribute is its own tracked container
            attributes, blocks = hold(model, layers, keras.Sequential, None)
            where = {n: (n if model.container.endswith("dict") else i) for i, n in enumerate(model.contained)} \
                if blocks is not None else {}
            if KERAS2 and isinstance(blocks, keras.Sequential):
                blocks.built = True  # its layers are built; Keras 2 refuses the variables of an unbuilt one
            self.net = Net(attributes, blocks, where, model.detach_after)
        self.layers = layers
        self.variables = {}
        for name in param_names(model):
            layer, role = name.split(".")
            roles = LINEAR_ROLES if model.layers[layer].linear else BATCHNORM_ROLES
            self.variables[name] = getattr(layers[layer], roles[role])
        for name, variable in self.variables.items():
            variable.assign(values[name])
        for name in model.frozen:
            if name in layers:
                layers[name].trainable = False  # the Keras way to freeze a layer
            elif KERAS2:
                raise Unsupported(f"Keras {keras.__version__} cannot freeze one weight ({name}) of a built layer: a "
                                  f"tf.Variable's trainable is fixed at creation (add_weight(trainable=False)); "
                                  f"afterwards only layer.trainable = False freezes")
            else:
                self.variables[name].trainable = False  # keras.Variable.trainable: one weight
        self.names = {id(v): n for n, v in self.variables.items()}

    def make_optimizer(self, optimizer: Optimizer):
        if self.api == "trainer":
            self._check_trainer_params(optimizer)
        if optimizer.params == "default":
            self.params = list(self.net.trainable_variables)
        elif optimizer.params == "all":
            self.params = list(self.net.variables)
        else:
            self.params = [self.variables[n] for n in optimizer.params]
        for name, coefficient in optimizer.regularizers.items():
            # gradient of L2(l2) is 2 * l2 * w: the coefficient c of the spec is l2 = c / 2
            regularizer, variable = keras.regularizers.L2(coefficient / 2), self.variables[name]
            if KERAS2:  # a built layer's weights take a regularizer only as a loss callable
                self.net.add_loss(lambda r=regularizer, v=variable: r(v))
            else:
                variable.regularizer = regularizer
        decay = optimizer.weight_decay or None  # Keras: None = no decay (AdamW: 0.0)
        kw = dict(learning_rate=optimizer.lr, global_clipnorm=optimizer.clip_global_norm)
        if optimizer.name in ("sgd", "momentum"):
            momentum = optimizer.momentum if optimizer.name == "momentum" else 0.0
            self.opt = keras.optimizers.SGD(momentum=momentum, weight_decay=decay, **kw)
        elif optimizer.name == "adam":
            self.opt = keras.optimizers.Adam(beta_1=optimizer.betas[0], beta_2=optimizer.betas[1],
                                             epsilon=optimizer.eps, weight_decay=decay, **kw)
        else:
            self.opt = keras.optimizers.AdamW(beta_1=optimizer.betas[0], beta_2=optimizer.betas[1],
                                              epsilon=optimizer.eps, weight_decay=optimizer.weight_decay, **kw)
        self.grads_ = None
        self.unconnected = tf.UnconnectedGradients.NONE
        self.steps_, self.apply_, self.trainers_ = {}, None, {}

    def optimizer_params(self):
        # A Keras optimizer is bound to no variables up front: it updates the list the loop hands
        # to apply_gradients, which is this one.
        return [self.names.get(id(v), "<unnamed variable>") for v in self.params]

    # ------------------------------------------------------------ training step
    def _train_step(self, path, train, backward, unconnected):
        """The step as a user writes it; in graph mode a tf.function (graph.compiled: one trace per
        shape of the step: path, train/eval, backward, unconnected-gradient mode)."""
        key = (tuple(path), train, backward, unconnected)
        if key not in self.steps_:
            def step(x, target):
                with tf.GradientTape() as tape:
                    y = self.net(x, path=list(path), training=train)
                    loss = tf.reduce_mean(tf.square(y - target))
                    if self.net.losses:  # per-weight regularizers, added as the Keras loop guide does
                        loss = loss + tf.add_n(self.net.losses)
                if not backward:
                    return loss, None
                sources = self.params
                if unconnected == tf.UnconnectedGradients.ZERO:
                    # TF 2.21's ZERO path raises AttributeError ('str' object has no attribute
                    # '_type_enum') on Keras 3 variables (tensorflow#116636); their backing
                    # tf.Variables (`.value`) take the same documented path
                    sources = self.params if KERAS2 else [v.value for v in self.params]
                return loss, tape.gradient(loss, sources, unconnected_gradients=unconnected)
            self.steps_[key] = graph.compiled(step) if self.mode == "graph" else step
        return self.steps_[key]

    def forward(self, path, x, target, train, backward):
        if self.api == "trainer":  # the engine's trainer steps without a backward pass
            return self._evaluate(path, x, target, train)
        if backward and self.grads_ is not None:
            raise Unsupported("TF gradients are functional: tape.gradient returns new tensors and keeps "
                              "none to accumulate into (summing gradient lists would be the adapter's "
                              "own arithmetic)")
        with tf.device(self.tf_device):
            loss, grads = self._train_step(path, train, backward, self.unconnected)(
                tf.constant(x), tf.constant(target))
        if backward:
            self.grads_ = list(grads)
        return float(loss)

    def clear_grads(self, mode):
        # Nothing to clear in TF: the next tape.gradient call returns fresh gradients. The mode
        # picks what that call returns for a variable not connected to the loss.
        self.grads_ = None
        self.unconnected = (tf.UnconnectedGradients.ZERO if mode == "zeros"
                            else tf.UnconnectedGradients.NONE)

    def _apply(self, grads):
        with warnings.catch_warnings():
            # Keras drops (None, variable) pairs and warns "Gradients do not exist for variables";
            # observed and reported by the tests, kept out of the progress output here
            warnings.filterwarnings("ignore", message="Gradients do not exist")
            self.opt.apply_gradients(zip(grads, self.params))

    def update(self):
        if self.grads_ is None:  # no backward since the last clearing: nothing to hand the optimizer
            return
        if self.apply_ is None:
            self.apply_ = graph.compiled(self._apply) if self.mode == "graph" else self._apply
        with tf.device(self.tf_device):
            self.apply_(self.grads_)

    # ------------------------------------------------------------ observation
    def grads(self):
        held = {}
        if self.grads_ is not None:
            for variable, grad in zip(self.params, self.grads_):
                held[id(variable)] = grad
        return {n: None if held.get(id(v)) is None else np.asarray(held[id(v)], dtype=np.float64)
                for n, v in self.variables.items()}

    def values(self):
        return {n: np.asarray(v.numpy(), dtype=np.float64) for n, v in self.variables.items()}

    def trainable(self):
        ids = {id(v) for v in self.net.trainable_variables}
        return {n: id(v) in ids for n, v in self.variables.items()}
