"""TensorFlow/Keras adapter: the custom training loop a TF2 user writes (Keras 3 layers), and Keras'
own trainer (compile + fit).

    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - t)) + sum(model.losses)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))

The model is a `keras.Model` subclass whose sublayers are assigned as attributes in `__init__`
(or held in a list / dict / tuple attribute, which Keras tracks itself). Dense kernels are already
(in, out). Keras' BatchNormalization momentum weighs the old statistic: neutral m -> 1 - m.

Images: Keras is channels-last (Conv2D's default data_format, and TF's CPU kernels), so the adapter
does what a Keras user porting an NCHW model does: the input batch is transposed to NHWC, conv
kernels are HWIO (canonical OIHW <-> HWIO), a BatchNormalization after a conv normalises the last
axis (its default: the channels), and a Dense after an image follows a keras.layers.Flatten, which
flattens in H, W, C order: that Dense's kernel rows are permuted from the canonical C, H, W order.
values() / grads() report every weight in the canonical layout. An Embedding's gradient is a
tf.IndexedSlices: it goes to the optimizer as is (Keras' own sparse update), and grads() densifies it.
Keras' Embedding has no padding_idx (cases with one are Unsupported). Dropout is
keras.layers.Dropout(rate=...), or Dropout(0.1) where the case writes the rate positionally, switched by
the `training` the step passes (fit: trainer.py). A bias left to default is left out (use_bias).

A cross-entropy is Keras' own loss object, called as loss(labels, scores): SparseCategoricalCrossentropy
(from_logits, ignore_class, reduction "sum_over_batch_size" for the mean or "sum"), each setting the case
leaves to default left out. Keras' sparse loss has no label smoothing: with smoothing the user writes
CategoricalCrossentropy(label_smoothing=...) on tf.one_hot labels, which has no ignore_class.

Gradients are functional: nothing is stored on a variable, so there is no clearing call. "Default"
and "none" clearing are the default `tape.gradient` (UnconnectedGradients.NONE: None where a
variable is not connected to the loss); "zeros" is `unconnected_gradients=UnconnectedGradients.ZERO`.
A backward pass without clearing in between (accumulation) is Unsupported: TF has no gradient to
accumulate into. The optimizer gets `weight_decay` as its own argument (decoupled in every Keras
optimizer), and exclusions through its exclude_from_weight_decay(var_list=... or var_names=...); a per-parameter coefficient c becomes that variable's `keras.regularizers.L2(c / 2)`
(loss c/2 * sum(w**2), gradient c * w), the Keras per-weight regularizer, added to `model.losses`.

--mode graph wraps the loop's step and update in tf.function (backend label "tf.function"): graph.py.
--api trainer is Keras' own trainer, compile + fit per step: trainer.py.
"""
from __future__ import annotations

import contextlib
import gc
import ipaddress
import json
import os
import re
import socket
import sys
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

from ..base import (InProcess, RankGroup, Runner, Unavailable, Unsupported, build_layers, free_port,  # noqa: E402
                    given_loss, hold, loaded)
from ...spec import (DROPOUT_PROBE, PADDING_PROBE, Model, Optimizer, defaults_of, padding_from, param_names,
                     replica_loss_weights)  # noqa: E402
from ...spec import layers as layer_kinds  # noqa: E402
# graph.py and trainer.py import tensorflow and keras themselves: after the quiet import above
from . import OFFERS, graph  # noqa: E402
from .trainer import KerasTrainer  # noqa: E402
from .workers import WORKER_ENV  # noqa: E402

LINEAR_ROLES = {"weight": "kernel", "bias": "bias"}
BATCHNORM_ROLES = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean",
                   "running_var": "moving_variance"}
LAYERNORM_ROLES = {"weight": "gamma", "bias": "beta"}
EMBEDDING_ROLES = {"weight": "embeddings"}


def given(**settings):
    """The constructor arguments a case sets: a setting left to "default" is left out, as a user
    who does not set it leaves it out, so the framework's own default applies."""
    return {k: v for k, v in settings.items() if v != "default"}


class Net(keras.Model):
    """A model as a Keras user subclasses it: sublayers assigned as attributes in __init__, some of
    them kept together in `self.blocks` (a list, dict, tuple or keras.Sequential)."""

    def __init__(self, attributes: dict, blocks=None, where: dict | None = None, detach_after=()):
        super().__init__()
        self.flatten = keras.layers.Flatten()  # before a Dense that takes an image (H, W, C order)
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
            layer = self._layer(name)
            if isinstance(layer, keras.layers.Dense) and len(x.shape) > 2:
                x = self.flatten(x)
            x = layer(x)
            if name in self.detach_after:
                x = tf.stop_gradient(x)
        return x


CLUSTERS: dict[str, list[str]] = {}  # a several-nodes group's rendezvous -> its workers' host:port, worker 0's first


def launch_workers(world: int, script: str, nodes: int, node: int, master: str) -> list[str]:
    """One node's workers, started by workers.py with TF_CONFIG, worker 0 at `master`. TF_CONFIG names every
    worker's host:port, so every node must be this host's: the other hosts' addresses are not the suite's to know."""
    host = master.rsplit(":", 1)[0]
    if not ipaddress.ip_address(socket.gethostbyname(host)).is_loopback:
        raise Unavailable(f"--node-address {host}: TF_CONFIG names every worker's host:port, and only this "
                          f"host's are known here; tensorflow's --nodes runs on a loopback address")
    cluster = CLUSTERS.setdefault(master, [master] + [f"{host}:{free_port(host)}" for _ in range(world - 1)])
    share = world // nodes
    return [sys.executable, "-m", "conformance.runners.tensorflow.workers", str(node * share), str(share),
            ",".join(cluster), script]


class TensorFlowRunner(KerasTrainer, Runner):
    framework = "tensorflow"
    offers = OFFERS
    # MirroredStrategy drives this host's replicas from this process and combines their gradients inside
    # apply_gradients, where none can be read; over several nodes, workers.py starts one worker per replica
    # (MultiWorkerMirroredStrategy), each still driving its replica through the strategy
    parallelism = InProcess(grads_readable=False, nodes=RankGroup(launch=launch_workers))
    fuses_update = True  # graph mode: the loop's step applies its gradients (forward)
    # no-clip: Keras has none, and make_optimizer says so for the case
    features = frozenset({"defaults", "layernorm", "freeze-steps", "lr-schedule", "no-decay", "no-decay-names", "no-decay-ndim",
                          "init-default", "per-sample-loss", "clip-norm", "no-clip", "embedding", "conv2d",
                          "dropout", "cross-entropy", "positional-args", "data-parallel", "touch", "sync-batchnorm"})

    def __init__(self, run=None, **axes):
        super().__init__(run, **axes)
        if self.device == "cuda":
            if not tf.config.list_physical_devices("GPU"):
                raise Unavailable(f"--device cuda: tensorflow {tf.__version__} sees no GPU "
                                  f"(tf.config.list_physical_devices('GPU') is empty; "
                                  f"install tensorflow[and-cuda] on a CUDA machine)")
            self.tf_device = "/GPU:0"
        elif self.device == "ascend":
            raise Unavailable(f"--device ascend: tensorflow {tf.__version__} has no Ascend device")
        else:
            self.tf_device = "/CPU:0"
        # Keras drops (None, variable) pairs with a "Gradients do not exist" warning (Keras 2 logs it
        # through TF's logger): observed and reported by the tests, kept out of the progress output
        tf.get_logger().addFilter(lambda record: "Gradients do not exist" not in record.getMessage())
        if self.mode == "graph":
            graph.quiet_retracing()
        self.strategy, self.replica_grads = None, None
        if self.run.replicas != "1" and os.environ.get(WORKER_ENV):  # one worker of several nodes' (workers.py)
            self.rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
            self.strategy = tf.distribute.MultiWorkerMirroredStrategy(
                communication_options=tf.distribute.experimental.CommunicationOptions(
                    implementation=tf.distribute.experimental.CommunicationImplementation.RING))  # CPU collectives
            self.tf_device = None  # its one replica runs in the strategy, which combines it with the other workers'
        elif self.run.replicas != "1":  # MirroredStrategy over as many logical CPU devices, in this process
            world = int(self.run.replicas)
            try:
                tf.config.set_logical_device_configuration(
                    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * world)
            except RuntimeError as exc:  # "Virtual devices cannot be modified after being initialized"
                raise Unavailable(f"--replicas {world}: this process's TF devices are already set up ({exc})") from None
            self.strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(world)])
            self.tf_device = None  # the strategy places every replica

    def _scope(self):
        """Where variables are made: the strategy's scope (mirrored variables) in a data-parallel run."""
        return self.strategy.scope() if self.strategy is not None else contextlib.nullcontext()

    def _device(self):
        return tf.device(self.tf_device) if self.tf_device is not None else contextlib.nullcontext()

    @staticmethod
    def version() -> str:
        return str(tf.__version__)

    def packages(self) -> dict[str, str]:
        return {"keras": str(keras.__version__)}  # Keras 2 up to TF 2.15, Keras 3 after: its variants are Keras'

    # ------------------------------------------------------------ model
    def build(self, model: Model, values):
        if model.container == "framework_dict":
            raise Unsupported("Keras has no dict container class; a plain dict attribute is Keras' "
                              "own tracked container (plain_dict)")
        padded = [n for n, spec in model.layers.items() if spec.padding_idx is not None]
        if padded:
            raise Unsupported("Keras' Embedding has no padding_idx: mask_zero=True masks index 0 in the layers "
                              "and losses after it, it does not stop that row's gradient")
        if self.strategy is not None:
            # The earlier cases' models, steps and fit's distributed datasets are garbage in reference cycles. When
            # Python's collector happens to start inside a later trace, it destroys their iterators there, and that
            # destructor waited on the iterators' own threads past the case's limit (a hang of about one column in
            # ten, of a compiled fit). Collected here, between cases, they go while nothing else runs.
            self.steps_, self.apply_, self.trainers_ = {}, None, {}
            gc.collect()
        keras.utils.set_random_seed(0)
        self.model = model
        # a BatchNormalization fixes its input rank when built: for images where spec/layers.py says so
        images = layer_kinds.image_batchnorms(model)
        with self._device(), self._scope():
            def make(name, spec):
                if spec.linear:
                    layer = keras.layers.Dense(spec.linear[1], name=name, **given(use_bias=spec.bias))
                    layer.build((None, spec.linear[0]))
                elif spec.layernorm:  # over the last axis, with gamma and beta (Keras' defaults)
                    layer = keras.layers.LayerNormalization(name=name, **given(epsilon=spec.eps))
                    layer.build((None, spec.layernorm))
                elif spec.conv2d:  # stride 1, "same" padding (k // 2 on each side for an odd k), NHWC
                    c_in, c_out, k = spec.conv2d
                    layer = keras.layers.Conv2D(c_out, k, name=name, **given(use_bias=spec.bias, padding=spec.padding))
                    layer.build((None, None, None, c_in))
                elif spec.embedding:
                    layer = keras.layers.Embedding(*spec.embedding, name=name)
                    layer.build((None,))
                elif spec.dropout:  # positional: Dropout(0.1), as ported code writes it
                    layer = keras.layers.Dropout(spec.dropout, name=name) if spec.positional else \
                        keras.layers.Dropout(rate=spec.dropout, name=name)
                else:  # Keras' momentum weighs the old statistic: the opposite of the neutral one
                    momentum = spec.momentum if spec.momentum == "default" else 1.0 - spec.momentum
                    # synchronized: statistics over every replica's rows, under a distribution strategy
                    sync = {"synchronized": True} if spec.synchronized else {}
                    layer = keras.layers.BatchNormalization(name=name, **given(momentum=momentum,
                                                                               epsilon=spec.eps), **sync)
                    layer.build((None, None, None, spec.batchnorm) if name in images else (None, spec.batchnorm))
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
        self.variables, self.absent = {}, {}
        for name in param_names(model):
            layer, role = name.split(".")
            spec = model.layers[layer]
            roles = LINEAR_ROLES if spec.linear or spec.conv2d else EMBEDDING_ROLES if spec.embedding else \
                LAYERNORM_ROLES if spec.layernorm else BATCHNORM_ROLES
            variable = getattr(layers[layer], roles[role])
            if variable is None:  # a bias its default left out: reads as zeros, with no gradient
                self.absent[name] = np.zeros(spec.out_features())
            else:
                self.variables[name] = variable
        self.flat_input = {}  # Dense layer -> the image shape (C, H, W) it takes, or () for vectors
        for name, value in loaded(model, values).items():
            if name in self.variables:
                self.variables[name].assign(self._layout(name, value, True))
        self._set_trainable(model.frozen, False)
        self.names = {id(v): n for n, v in self.variables.items()}

    # ------------------------------------------------------------ layouts
    def _layout(self, name, value, to_keras: bool):
        """A canonical value in the layout of its Keras variable (to_keras), or back."""
        layer, role = name.split(".")
        if role == "weight" and self.model.layers[layer].conv2d:
            return np.transpose(value, (2, 3, 1, 0) if to_keras else (3, 2, 0, 1))  # OIHW <-> HWIO
        if role == "weight" and self.flat_input.get(layer):  # Dense rows C, H, W <-> Flatten's H, W, C
            c, h, w = self.flat_input[layer]
            rows = (c, h, w, -1) if to_keras else (h, w, c, -1)
            order = (1, 2, 0, 3) if to_keras else (2, 0, 1, 3)
            return np.reshape(np.transpose(np.reshape(value, rows), order), (c * h * w, -1))
        return value

    def _inputs(self, path, x):
        """The batch as the Keras model takes it (images NHWC), after fixing what each layer of the
        path takes: a Dense whose input is an image gets its kernel rows in Flatten's H, W, C order
        the first time (before any update: a layer is fed one shape)."""
        shapes = self.model.shapes(path)
        for name, shape in zip(path, shapes):
            owner = self.model.layers[name].tie or name
            spec = self.model.layers[owner]
            if spec.linear:
                weight = f"{owner}.weight"
                if owner not in self.flat_input:
                    value = self._layout(weight, self.variables[weight].numpy(), False)
                    self.flat_input[owner] = shape if len(shape) == 3 else ()
                    self.variables[weight].assign(self._layout(weight, value, True))
                elif self.flat_input[owner] != (shape if len(shape) == 3 else ()):
                    raise Unsupported(f"Dense {name} takes inputs of two shapes: its kernel rows have one order")
        return np.transpose(x, (0, 2, 3, 1)) if x.ndim == 4 else x

    @staticmethod
    def _targets(t):
        """The targets in the model's layout: a path that ends in a conv gives NHWC images."""
        return np.transpose(t, (0, 2, 3, 1)) if t.ndim == 4 else t

    def _set_trainable(self, names, trainable):
        for name in names:
            if name in self.layers:
                self.layers[name].trainable = trainable  # the Keras way to freeze a layer
            elif KERAS2:
                raise Unsupported(f"Keras {keras.__version__} cannot freeze one weight ({name}) of a built layer: a "
                                  f"tf.Variable's trainable is fixed at creation (add_weight(trainable=False)); "
                                  f"afterwards only layer.trainable = False freezes")
            else:
                self.variables[name].trainable = trainable  # keras.Variable.trainable: one weight

    def set_trainable(self, names, trainable):
        if not names:
            return
        self._set_trainable(names, trainable)
        # A traced step keeps what it saw at trace time (the trainable_variables it differentiates,
        # a BatchNormalization's `trainable`), as a compiled fit keeps its train function: Keras says
        # to call compile() again after changing `trainable`, and a tf.function user wraps the step
        # again. Both restart from the new flags here; the optimizer (and its state) is kept.
        self.steps_, self.apply_, self.trainers_ = {}, None, {}
        if self.opt_spec.params == "default":  # the loop hands over model.trainable_variables as they are now
            self.params = list(self.net.trainable_variables)

    def set_lr(self, lr):
        # the way Keras users (and its LearningRateScheduler callback) change it: assign the
        # optimizer's learning_rate, a variable the compiled steps read at each call
        self.opt.learning_rate = lr

    def make_optimizer(self, optimizer: Optimizer):
        with self._scope():  # a data-parallel run's optimizer is made in the strategy's scope, as its variables
            self._make_optimizer(optimizer)

    def _make_optimizer(self, optimizer: Optimizer):
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
        if optimizer.no_clip:
            raise Unsupported("Keras optimizers clip every gradient they update (clipnorm, global_clipnorm): "
                              "no variable can be left out of clipping or of the global norm")
        # a setting left to "default" is left out of the constructor (given); Keras: weight_decay
        # None = no decay (AdamW: 0.0)
        decay = optimizer.weight_decay if optimizer.name == "adamw" else optimizer.weight_decay or None
        kw = given(learning_rate=optimizer.lr, weight_decay=decay)
        kw.update(global_clipnorm=optimizer.clip_global_norm, clipnorm=optimizer.clip_norm)
        if optimizer.name in ("sgd", "momentum"):
            momentum = optimizer.momentum if optimizer.name == "momentum" else 0.0
            self.opt = keras.optimizers.SGD(**given(momentum=momentum), **kw)
        else:
            betas = ("default", "default") if optimizer.betas == "default" else optimizer.betas
            make = keras.optimizers.Adam if optimizer.name == "adam" else keras.optimizers.AdamW
            self.opt = make(**given(beta_1=betas[0], beta_2=betas[1], epsilon=optimizer.eps), **kw)
        if optimizer.no_decay or optimizer.no_decay_ndim_below is not None:
            # Keras' own exclusion list, set before the optimizer is built (its first update); by dimensions: the
            # users' `len(v.shape) < 2`
            below = optimizer.no_decay_ndim_below
            listed = [v for n, v in self.variables.items()
                      if n in optimizer.no_decay or (below is not None and len(v.shape) < below)]
            self.opt.exclude_from_weight_decay(var_list=listed)
        if optimizer.no_decay_names:  # the same call by names: Keras matches them against each variable's name
            self.opt.exclude_from_weight_decay(var_names=list(optimizer.no_decay_names))
        self.opt_spec, self.built_with = optimizer, None
        self.grads_, self.applied = None, False
        self.unconnected = tf.UnconnectedGradients.NONE
        self.steps_, self.apply_, self.trainers_, self.criteria_ = {}, None, {}, {}

    def defaults(self):
        """Read from the built layers and optimizer: the values Keras chose for what the case left out."""
        opt, out = self.opt, {}
        read = {"lr": lambda: float(opt.learning_rate),
                "weight_decay": lambda: float(opt.weight_decay or 0.0),  # Keras: None = no decay
                "momentum": lambda: float(opt.momentum),
                "betas": lambda: [float(opt.beta_1), float(opt.beta_2)],
                "eps": lambda: float(opt.epsilon)}
        for name in defaults_of(self.model, self.opt_spec):
            owner, field = name.split(".")
            if owner == "optimizer":
                out[name] = read[field]()
            elif field == "momentum":  # Keras weighs the old statistic: the new batch weighs 1 - m
                out[name] = 1.0 - float(self.layers[owner].momentum)
            elif field == "bias":
                out[name] = self.layers[owner].bias is not None
            elif field == "rate":  # measured: the fraction of ones the built layer zeroes in train mode
                with self._device():
                    kept = self.layers[owner](tf.ones([DROPOUT_PROBE]), training=True)
                out[name] = float(np.mean(kept.numpy() == 0))
            elif field == "padding":  # measured: the side of the built layer's output on an image of ones (NHWC)
                c_in, _, k = self.model.layers[owner].conv2d
                with self._device():
                    y = self.layers[owner](tf.ones([1, PADDING_PROBE, PADDING_PROBE, c_in]))
                out[name] = padding_from(int(y.shape[1]), k)
            else:
                out[name] = float(self.layers[owner].epsilon)
        return out

    def optimizer_params(self):
        # A Keras optimizer is bound to no variables up front: it updates the list the loop hands
        # to apply_gradients, which is this one.
        return [self.names.get(id(v), "<unnamed variable>") for v in self.params]

    # ------------------------------------------------------------ the loss
    def _criterion(self, loss, path):
        """(the Keras loss object a user writes for this cross-entropy, the number of classes its labels are
        one-hot over, or None for labels as they are). Keras' sparse loss has no label smoothing: a user who
        smooths writes CategoricalCrossentropy on one-hot labels, which has no ignore_class."""
        settings, kw = given_loss(loss), {}
        if "reduction" in settings:  # Keras' mean over the batch is its sum_over_batch_size reduction
            kw["reduction"] = {"mean": "sum_over_batch_size", "sum": "sum"}[settings["reduction"]]
        if "from_logits" in settings:
            kw["from_logits"] = settings["from_logits"]
        if settings.get("label_smoothing"):
            if "ignore_index" in settings:
                raise Unsupported("Keras' SparseCategoricalCrossentropy has no label_smoothing, and "
                                  "CategoricalCrossentropy, which has it, has no ignore_class")
            return (keras.losses.CategoricalCrossentropy(label_smoothing=settings["label_smoothing"], **kw),
                    self.model.shapes(path)[-1][0])
        if "ignore_index" in settings:
            kw["ignore_class"] = settings["ignore_index"]
        return keras.losses.SparseCategoricalCrossentropy(**kw), None

    def _labels(self, loss, path, target):
        """(the loss object, made once per loss and path as a user makes it once, the targets as it takes them:
        the squared error's in the model's layout, or the labels, one-hot where the loss wants them)."""
        if loss is None:
            return None, tf.constant(self._targets(target))
        key = (loss.model_dump_json(), tuple(path))
        if key not in self.criteria_:
            self.criteria_[key] = self._criterion(loss, path)
        criterion, classes = self.criteria_[key]
        return criterion, tf.constant(target) if classes is None else tf.one_hot(target, classes)

    # ------------------------------------------------------------ training step
    def _train_step(self, path, train, backward, unconnected, reduce=True, criterion=None, touch=(), apply=False):
        """The step as a user writes it; in graph mode a tf.function (graph.compiled: one trace per
        shape of the step: path, train/eval, backward, unconnected-gradient mode, reduction, loss object, the
        layers whose weights the loss adds times zero, whether it applies the gradients too)."""
        key = (tuple(path), train, backward, unconnected, reduce, id(criterion), tuple(touch), apply)
        if key not in self.steps_:
            def step(x, target):
                with tf.GradientTape() as tape:
                    y = self.net(x, path=list(path), training=train)
                    if criterion is not None:  # the Keras loss object: loss(labels, scores)
                        loss = criterion(target, y)
                    else:
                        squared = tf.square(y - target)
                        # per sample (not reduced): a vector, handed to tape.gradient as it is
                        loss = tf.reduce_mean(squared) if reduce else \
                            tf.reduce_mean(tf.reshape(squared, [tf.shape(squared)[0], -1]), axis=1)
                    if self.net.losses:  # per-weight regularizers, added as the Keras loop guide does
                        loss = loss + tf.add_n(self.net.losses)
                    for name in touch:  # the unused-parameter workaround: loss + 0 * the weights' sum
                        loss = loss + 0 * tf.add_n([tf.reduce_sum(w) for w in self.layers[name].weights
                                                     if w.trainable])
                if not backward:
                    return loss, None
                sources = self.params
                if unconnected == tf.UnconnectedGradients.ZERO:
                    # TF 2.21's ZERO path raises AttributeError ('str' object has no attribute
                    # '_type_enum') on Keras 3 variables (tensorflow#116636); their backing
                    # tf.Variables (`.value`) take the same documented path
                    sources = self.params if KERAS2 else [v.value for v in self.params]
                grads = tape.gradient(loss, sources, unconnected_gradients=unconnected)
                if apply:  # TF's custom-loop guide: apply_gradients in the same function as the loss
                    self._apply(grads)
                return loss, grads
            self.steps_[key] = graph.compiled(step) if self.mode == "graph" else step
        return self.steps_[key]

    def forward(self, path, x, target, train, backward, reduce=True, loss=None, touch=(), update=False):
        if self.api == "trainer":  # the engine's trainer steps without a backward pass
            return self._evaluate(path, x, target, train, loss)
        if backward and self.grads_ is not None:
            raise Unsupported("TF gradients are functional: tape.gradient returns new tensors and keeps "
                              "none to accumulate into (summing gradient lists would be the adapter's "
                              "own arithmetic)")
        # graph mode: one tf.function computes the loss and applies the gradients, as users write a compiled
        # step; it matters where the loss raises after the optimizer has run ops of its own (its decay)
        apply = update and backward and self.mode == "graph" and self.strategy is None
        x = self._inputs(path, x)
        with self._device(), self.refusal() if apply else contextlib.nullcontext():
            criterion, target = self._labels(loss, path, target)
            value, grads = self._train_step(path, train, backward, self.unconnected, reduce, criterion, touch,
                                            apply)(tf.constant(x), target)
        if backward:
            self.grads_ = list(grads)
            self.applied = apply
        return float(tf.reduce_mean(value))

    def forward_replicas(self, shards, x, target, train, backward, loss=None, touch=()):
        """A data-parallel step as a custom loop under MirroredStrategy writes it: the step (the tape on the
        replica's own rows, its loss as the single-device loop computes it) run by strategy.run on each replica's
        rows; the replicas' gradients stay per replica until update() hands them to apply_gradients in each
        replica, which combines them. Returns the global batch's loss (spec.replica_loss_weights)."""
        if len({tuple(path) for path, _ in shards}) > 1:
            raise Unsupported("replicas with paths of their own: strategy.run runs one step function on every "
                              "replica")
        if backward and self.replica_grads is not None:
            raise Unsupported("TF gradients are functional: tape.gradient returns new tensors and keeps none to "
                              "accumulate into")
        path = shards[0][0]
        criterion, labels = self._labels(loss, path, target)
        inputs = tf.constant(self._inputs(path, x))
        parts = [(tf.gather(inputs, list(rows)), tf.gather(labels, list(rows))) for _, rows in shards]
        per_replica = self.strategy.experimental_distribute_values_from_function(
            lambda context: parts[context.replica_id_in_sync_group])
        step = self._train_step(path, train, backward, self.unconnected, True, criterion, touch)
        losses, grads = self.strategy.run(lambda part: step(*part), args=(per_replica,))
        if backward:
            self.replica_grads = grads
        values = [float(tf.reduce_mean(v)) for v in self.strategy.experimental_local_results(losses)]
        if len(values) < len(shards):  # one worker's replica: its own rows' loss, which the rank group weighs
            return values[0]
        weights = replica_loss_weights([len(rows) for _, rows in shards], loss)
        return sum(w * v for w, v in zip(weights, values))

    def disagreeing(self):
        """The variables whose copies on the replicas hold different values: this process's copies, or on one worker
        of several nodes' every worker's own copy, gathered (a read in the replica is its own copy; one outside may
        reduce them: Keras 2's moving statistics read the mean)."""
        out = set()
        if isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            names = list(self.variables)
            sizes = [int(np.prod(self.variables[n].shape)) for n in names]
            # one gather of every variable, flattened into one row per worker
            own = self.strategy.run(lambda: tf.concat([tf.reshape(tf.cast(self.variables[n], tf.float64), [-1])
                                                       for n in names], 0)[None])
            every = self.strategy.gather(own, axis=0).numpy()
            for name, part in zip(names, np.split(every, np.cumsum(sizes)[:-1], axis=1)):
                if any(not np.array_equal(part[0], row) for row in part[1:]):
                    out.add(name)
            return out
        for name, variable in self.variables.items():
            copies = getattr(variable if KERAS2 else variable.value, "values", ())
            if any(not np.array_equal(copies[0].numpy(), c.numpy()) for c in copies[1:]):
                out.add(name)
        return out

    def clear_grads(self, mode):
        # Nothing to clear in TF: the next tape.gradient call returns fresh gradients. The mode
        # picks what that call returns for a variable not connected to the loss.
        self.grads_ = self.replica_grads = None
        self.unconnected = (tf.UnconnectedGradients.ZERO if mode == "zeros"
                            else tf.UnconnectedGradients.NONE)

    def _apply(self, grads):
        with warnings.catch_warnings():
            # Keras drops (None, variable) pairs and warns "Gradients do not exist for variables";
            # observed and reported by the tests, kept out of the progress output here
            warnings.filterwarnings("ignore", message="Gradients do not exist")
            self.opt.apply_gradients(zip(grads, self.params))

    def update(self):
        if self.strategy is not None:  # each replica hands its own gradients to apply_gradients
            if self.replica_grads is not None:
                with self.refusal():
                    self.strategy.run(self._apply, args=(list(self.replica_grads),))
            return
        if self.grads_ is None or self.applied:  # no backward since the last clearing, or forward applied it
            return
        if self.apply_ is None:
            self.apply_ = graph.compiled(self._apply) if self.mode == "graph" else self._apply
        with self._device(), self.refusal():
            self.apply_(self.grads_)

    @contextlib.contextmanager
    def refusal(self):
        """A Keras optimizer updates only the variables of its first update (its build): handed one
        unfrozen since, it refuses it ("Unknown variable" in Keras 3, "cannot recognize variable" in
        Keras 2). That refusal, observed, makes the case unsupported; any other error propagates."""
        if self.built_with is None:  # what this first update hands the optimizer (fit: trainable_variables)
            self.built_with = {id(v) for v in (self.net.trainable_variables if self.api == "trainer" else self.params)}
        try:
            yield
        except (KeyError, ValueError) as error:
            added = [self.names.get(id(v), "?") for v in self.net.trainable_variables if id(v) not in self.built_with]
            if not added:
                raise
            said = re.sub(r"<[^>]*>", "", str(error), flags=re.S)  # the variable's repr
            # graph mode: the error after tf.function's traceback; KeyError quotes its message
            said = said.rsplit("Error: ", 1)[-1].strip().strip("'\"")
            said = " ".join(re.sub(r":\s*\.", ".", said).split())[:200]
            raise Unsupported(f"Keras' optimizer refuses {added[0]}, trainable again after its first update "
                              f"(its build): {said}") from None

    # ------------------------------------------------------------ observation
    def grads(self):
        held = {}
        if self.grads_ is not None:
            for variable, grad in zip(self.params, self.grads_):
                held[id(variable)] = grad
        # an Embedding's gradient is a tf.IndexedSlices: reported dense (zero rows not looked up)
        return {**{n: None if held.get(id(v)) is None else
                   self._layout(n, np.asarray(tf.convert_to_tensor(held[id(v)]), dtype=np.float64), False)
                   for n, v in self.variables.items()}, **dict.fromkeys(self.absent)}

    def values(self):
        return {**{n: self._layout(n, np.asarray(v.numpy(), dtype=np.float64), False)
                   for n, v in self.variables.items()}, **{n: z.copy() for n, z in self.absent.items()}}

    def trainable(self):
        ids = {id(v) for v in self.net.trainable_variables}
        return {**{n: id(v) in ids for n, v in self.variables.items()}, **dict.fromkeys(self.absent, False)}
