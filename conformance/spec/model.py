"""The spec's vocabulary: the pydantic models of a case file, and what a case asks of a run.

A case is a tiny model, an optimizer, a schedule of steps and checks on what was observed
(docs/spec.md is generated from these models). Instances (matrix and variants resolved) come from
expand.py; the layer kinds are declared in layers.py.
"""
from __future__ import annotations

import math
import re
from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from ..run import AXES as RUN_AXES
from . import layers as layer_kinds

TOPICS = ("seeds", "gradient_flow", "weight_decay", "optimizer_state", "batchnorm", "layernorm",
          "embedding", "conv", "dropout", "registration", "clipping", "accumulation", "freezing", "defaults", "schedules",
          "losses", "data_parallel")
# Matrix axes and the case field each one sets.
AXES = {"optimizer": ("optimizer", "name"), "clear": ("clear",),
        "params": ("optimizer", "params"), "container": ("model", "container")}
MAX_CASE_INSTANCES = 1000
# What one case may cost, in numbers held at once: every parameter and statistic at every step (the
# observation of a run, which both processes hold), and one step's activations over the batch.
# The shipped cases are under 100 thousand; these bounds keep a hostile case's memory under ~1 GiB.
MAX_OBSERVED = 20_000_000
MAX_ACTIVATIONS = 20_000_000


# ---------------------------------------------------------------- the spec's vocabulary
class _Strict(BaseModel):
    # a string under a field is its description: docs/spec.md is generated from them
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


Width = Annotated[int, Field(ge=1, le=1024)]  # cases are tiny models; bounds keep the oracle quick
# Hyperparameters: finite, and in the range where the update rule means something.
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
DecayRate = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]  # momentum, Adam's betas
# "default": the framework's constructor decides (the adapter leaves the argument out); the oracle
# uses the reference's default (REFERENCE_DEFAULTS in reference.py: torch's constructors)
Default = Literal["default"]
# The label that data prepared for torch marks "ignore" with (CrossEntropyLoss's ignore_index default): a case that
# leaves ignore_index to the framework carries it in its batches.
TORCH_IGNORE_INDEX = -100
# Inputs (ones) a positional dropout's built layer takes in train mode when its rate is measured (`<layer>.rate`).
DROPOUT_PROBE = 100_000
# Side of the square image of ones (one sample) a conv2d whose padding is left to default takes when its padding is
# measured (`<layer>.padding`).
PADDING_PROBE = 8


def padding_from(side_out: int, kernel: int) -> float:
    """The zero padding per side that gives an output of `side_out` from a PADDING_PROBE image at stride 1."""
    return (side_out - PADDING_PROBE + kernel - 1) / 2


Kernel = Annotated[int, Field(ge=1, le=7, multiple_of=1)]
KEYS = (*layer_kinds.KINDS, "tie")  # a layer has exactly one of these keys


class Layer(_Strict):
    """Exactly one of: linear [in, out] (flattens a channels x height x width input, in that order),
    conv2d [in channels, out channels, kernel] (stride 1, zero padding kernel // 2: the image keeps
    its size; weight laid out out x in x kh x kw), batchnorm features (over the channels of an image),
    layernorm features (over the last axis, with weight and bias), embedding [rows, dim] (looks up
    one integer index per sample; the first layer of any path it is on), dropout rate (no parameters;
    zeroes inputs at random in train mode and scales the rest by 1 / (1 - rate)), tie (alias of
    another layer)."""
    linear: tuple[Width, Width] | None = None
    """[in, out]: y = x @ weight + bias; an image input is flattened first, channels first"""
    conv2d: tuple[Width, Width, Kernel] | None = None
    """[in channels, out channels, kernel]: stride 1, zero padding kernel // 2, weight out x in x kh x kw"""
    batchnorm: Width | None = None
    """features (an image's channels); images or vectors as the layer declared before it gives (Layer kinds)"""
    layernorm: Width | None = None
    """features: normalises each sample over its last axis, with weight and bias"""
    embedding: tuple[Width, Width] | None = None
    """[rows, dim]: looks up one integer index per sample; the first layer of any path it is on"""
    padding_idx: Annotated[int, Field(ge=0)] | None = None
    """embedding: the row that never gets a gradient"""
    dropout: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] | None = None
    """rate: zeroes inputs at random in train mode and scales the rest by 1 / (1 - rate)"""
    tie: Annotated[str, Field(min_length=1)] | None = None
    """another layer's name: this one is that layer (shared parameters)"""
    bias: bool | Default = True
    """linear, conv2d: whether the layer has a bias, or default (the framework's constructor decides; a layer
    built without one reads as a zero bias that gets no gradient, and a `default <layer>.bias` check compares)"""
    padding: Literal["same"] | Default = "same"
    """conv2d: same (zero padding kernel // 2: the image keeps its size), or default (the padding argument left
    out, as ported code leaves it: the padding the built layer adds per side is measured on a PADDING_PROBE image,
    a `default <layer>.padding` check; such a layer is on no path, as the size of its output is the framework's)"""
    positional: bool = False
    """dropout: the rate is written as the constructor's first positional argument, as ported code writes it
    (`Dropout(0.1)`); the fraction of its inputs the built layer then zeroes in train mode is measured on
    DROPOUT_PROBE ones and compared (a `default <layer>.rate` check)"""
    momentum: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | Default = 0.1
    """BatchNorm: the new batch's weight in the running statistics, or default (the framework's)"""
    synchronized: bool = False
    """BatchNorm in a data-parallel case: the framework's synchronised BatchNorm, whose statistics are the global
    batch's, over every replica's rows (torch's and paddle's SyncBatchNorm, MindSpore's nn.SyncBatchNorm, Keras'
    synchronized=True)"""
    eps: Positive | Default = 1e-5
    """BatchNorm, LayerNorm: added to the variance, or default (the framework's)"""
    init: Literal["case", "default"] = "case"
    """case: the parameters start from the case's values, loaded into the built layer; default: the framework's
    own initializers draw them (only `initial` checks compare them, by their statistics)"""

    @model_validator(mode="after")
    def _one_kind(self):
        if sum(getattr(self, k) is not None for k in KEYS) != 1:
            raise ValueError(f"a layer needs exactly one of {', '.join(repr(k) for k in KEYS)}")
        if self.conv2d and self.conv2d[2] % 2 == 0:
            raise ValueError("a conv2d kernel must be odd: the image keeps its size with padding kernel // 2")
        if self.padding_idx is not None and not (self.embedding and self.padding_idx < self.embedding[0]):
            raise ValueError("'padding_idx' needs an embedding layer with more rows than it")
        if self.bias != True and self.kind not in layer_kinds.OPTIONAL_BIAS:  # noqa: E712 (False or "default")
            raise ValueError(f"'bias' is a setting of linear and conv2d layers, not of {self.kind}")
        if self.padding != "same" and not self.conv2d:
            raise ValueError(f"'padding' is a setting of conv2d layers, not of {self.kind}")
        if self.synchronized and not self.batchnorm:
            raise ValueError(f"'synchronized' is a BatchNorm setting, not of {self.kind}")
        if self.positional and not self.dropout:
            raise ValueError("'positional' writes a dropout's rate positionally: it needs a dropout layer")
        if self.init == "default" and (self.tie or self.dropout):
            raise ValueError("'init: default' needs a layer with parameters of its own (not a tie or a dropout)")
        return self

    @property
    def kind(self) -> str:
        """Its key in layers.KINDS ("tie" for an alias)."""
        return next(k for k in KEYS if getattr(self, k) is not None)

    @property
    def width(self) -> int:
        """Features in and out of a normalisation layer."""
        return self.batchnorm or self.layernorm

    def param_roles(self) -> tuple[str, ...]:
        return layer_kinds.roles(self)

    def weight_shape(self) -> tuple[int, ...]:
        return layer_kinds.weight_shape(self)

    def out_features(self) -> int:
        """Features (channels of an image) this layer gives."""
        return layer_kinds.out_features(self)


Container = Literal["attributes", "framework_list", "plain_list", "framework_dict",
                    "plain_dict", "plain_tuple"]
ClearMode = Literal["default", "none", "zeros"]


class Model(_Strict):
    layers: dict[str, Layer]
    """the layers by name, in declaration order"""
    container: Container = "attributes"
    """what holds the layers named in `contained` (the others are plain attributes of the model)"""
    contained: list[str] = []
    """layers held in `container`"""
    frozen: list[str] = []
    """"layer" or "layer.param": marked not trainable the framework's way when the model is built"""
    detach_after: list[str] = []
    """layers whose output passes through stop_gradient / detach"""
    image_size: int = Field(4, ge=1, le=16)
    """height and width of the images a conv2d path starts with"""

    @field_validator("layers")
    @classmethod
    def _plain_names(cls, layers):
        bad = [name for name in layers if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", str(name))]
        if bad:  # a parameter is named layer.role: a dot (or a space) in a layer's name would be ambiguous
            raise ValueError(f"layer name {bad[0]!r}: letters, digits, _ and - only, starting with a letter or _")
        return layers

    def spec(self, layer: str) -> Layer:
        """The layer's own spec, or for a tie the spec of the layer it ties to."""
        return self.layers[self.layers[layer].tie or layer]

    def shapes(self, path: list[str]) -> list[tuple[int, ...]]:
        """The activation shape of one sample before the path and after each of its layers (layers.py)."""
        return layer_kinds.shapes(self, path)


class Optimizer(_Strict):
    name: Literal["sgd", "momentum", "adam", "adamw"]
    """the optimizer as each framework's users build it"""
    lr: NonNegative | Default = 0.1
    """learning rate, or default (the framework's)"""
    weight_decay: NonNegative | Default = 0.0
    """coupled L2 for sgd, momentum and adam, decoupled for adamw; or default"""
    momentum: DecayRate | Default = 0.9
    """momentum: the heavy-ball coefficient, or default"""
    betas: tuple[DecayRate, DecayRate] | Default = (0.9, 0.999)
    """adam, adamw: the moments' decay rates, or default"""
    eps: Positive | Default = 1e-8
    """adam, adamw: epsilon, or default"""
    params: Union[Literal["default", "all"], list[str]] = "default"
    """default: the framework's idiomatic parameter collection of the model; all: every piece of model
    state, BatchNorm statistics included; or these parameters by name"""
    regularizers: dict[str, NonNegative] = {}
    """per-parameter decay coefficient, replacing weight_decay for that parameter"""
    no_decay: list[str] = []
    """parameters excluded from weight decay the framework's own way (parameter groups, exclude lists)"""
    no_decay_names: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.]{1,64}$")]] = []
    """parts of names: a parameter is excluded from weight decay where its name, as the framework's own name
    filter sees it, contains one (torch groups from named_parameters(), paddle apply_decay_param_fun, MindSpore
    groups from Parameter.name, Keras exclude_from_weight_decay(var_names=...), an optax mask over the paths)"""
    no_decay_ndim_below: Annotated[int, Field(ge=1, le=8)] | None = None
    """a parameter with fewer dimensions than this, as the framework's parameter object gives them (p.ndim), is
    excluded from weight decay: the users' filter `p.ndim < 2` that spares biases and norm scales (open_clip,
    timm), written as each framework's own exclusion (torch groups, paddle's no-decay names, MindSpore groups,
    Keras exclude_from_weight_decay(var_list=...))"""
    clip_global_norm: Positive | None = None
    """clip the gradients to this global L2 norm before the update"""
    clip_norm: Positive | None = None
    """clip each gradient to this L2 norm on its own"""
    no_clip: list[str] = []
    """parameters left out of clipping and of the global norm (Paddle's need_clip=False)"""

    @model_validator(mode="after")
    def _one_clipping(self):
        if self.clip_global_norm is not None and self.clip_norm is not None:
            raise ValueError("'clip_global_norm' and 'clip_norm' exclude each other")
        if self.no_clip and self.clip_global_norm is None and self.clip_norm is None:
            raise ValueError("'no_clip' needs 'clip_global_norm' or 'clip_norm'")
        if self.no_decay_names and (self.no_decay or self.regularizers):
            raise ValueError("'no_decay_names' excludes by name alone: it cannot join 'no_decay' or 'regularizers'")
        if self.no_decay_ndim_below is not None and (self.no_decay or self.regularizers or self.no_decay_names):
            raise ValueError("'no_decay_ndim_below' excludes by dimensions alone: it cannot join 'no_decay', "
                             "'no_decay_names' or 'regularizers'")
        return self


class CrossEntropy(_Strict):
    """Cross-entropy of the path's output (a vector: one score per class) against one integer label per
    sample, written with the framework's own loss object. A setting left to default is left out of its
    constructor; its effect is judged by the loss and the gradients (the oracle uses torch's
    CrossEntropyLoss defaults)."""
    reduction: Literal["mean", "sum"] | Default = "mean"
    """mean: over the samples whose label is not ignored; sum; or default (the framework's)"""
    from_logits: Literal[True] | Default = True
    """true: the scores are logits (the loss applies the softmax itself); default: the framework's reading of them"""
    ignore_index: Annotated[int, Field(ge=-1000)] | Default | None = None
    """a label whose samples add nothing to the loss (sample 0 of each batch carries it); default: the
    framework's default, with sample 0 carrying TORCH_IGNORE_INDEX (-100) as data prepared for torch does;
    none: no sample carries an ignored label (the framework's default is left in place)"""
    label_smoothing: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] | Default = 0.0
    """the mass moved from the label to a uniform share over all classes: (1 - s) * one_hot + s / classes"""

    def ignored_label(self) -> int | None:
        """The label a batch's ignored samples carry, or None."""
        return TORCH_IGNORE_INDEX if self.ignore_index == "default" else self.ignore_index


class DataParallel(_Strict):
    """Data-parallel training: `replicas` copies of the model, each fed its share of every global batch (in rank
    order), whose gradients the framework's distributed engine combines before each update. The reference is the
    same model trained on one device on the global batch with the mean loss (over the samples, whatever replica
    took them)."""
    replicas: int = Field(2, ge=2, le=8)
    """the replicas (processes or devices) training together; a run with that many replicas executes the case"""

    @field_validator("replicas")
    @classmethod
    def _a_run_executes_it(cls, replicas):
        runs = [int(v) for v in next(a for a in RUN_AXES if a.name == "replicas").values if v != "1"]
        if replicas not in runs:
            raise ValueError(f"no run executes {replicas} replicas (--replicas takes {', '.join(map(str, runs))})")
        return replicas
    shares: list[Annotated[int, Field(ge=1)]] | None = None
    """samples of each global batch per replica, in rank order, summing to the batch size; default: equal shares"""
    find_unused: bool = False
    """the engine is told that a parameter may get no gradient on a step (torch's and paddle's
    find_unused_parameters=True); without it, an engine may refuse such a step"""

    def rows(self, batch_size: int) -> list[range]:
        """The global batch's rows each replica takes, in rank order."""
        shares = self.shares or [batch_size // self.replicas] * self.replicas
        starts = [sum(shares[:r]) for r in range(len(shares))]
        return [range(start, start + n) for start, n in zip(starts, shares)]


def replica_loss_weights(rows: list[int], loss: "CrossEntropy | None") -> list[float]:
    """What each replica's loss (over `rows` samples) weighs in the global batch's: 1 for a summed cross-entropy, its
    share of the rows for a mean (exact for the mean squared error, and for a cross-entropy that ignores no label)."""
    summed = loss is not None and loss.reduction == "sum"
    return [1.0 if summed else n / sum(rows) for n in rows]


class Step(_Strict):
    path: list[str] = Field(min_length=1)
    """the layers the forward runs, in order"""
    batch: int | None = Field(None, ge=0, le=1_000_000)
    """the input batch's index (default: the step's index)"""
    batch_size: int | None = Field(None, ge=1, le=4096)
    """samples in this step's batch (default: the case's batch_size); 1 leaves a BatchNorm on vectors one value
    per channel"""
    clear: bool = True
    """clear gradients before this step"""
    backward: bool = True
    """back-propagate the loss"""
    all_padding: bool = False
    """every sample of the batch is padding: a path that starts with an embedding looks up only its padding row,
    and a cross-entropy's labels are all its ignored label"""
    reduce: bool = True
    """false: the loss stays per sample (a vector: each sample's mean squared error) and backward is called on
    it as it is, as in code ported without its reduction"""
    update: bool = True
    """take an optimizer step"""
    train: bool = True
    """train mode (else eval) for the forward"""
    repeat: int = Field(1, ge=1, le=1000)
    """run this step so many times"""
    freeze: list[str] = []
    """before this step, once the optimizer exists: layers (the framework's layer-level switch) or
    parameters to mark not trainable, as a fine-tuning schedule does"""
    unfreeze: list[str] = []
    """before this step: layers or parameters to mark trainable again"""
    lr: NonNegative | None = None
    """the learning rate from this step on (a schedule)"""
    touch: list[str] = []
    """layers whose parameters the loss adds times zero (`loss + 0 * p.sum()` for each), the workaround that gives a
    layer the step does not run a gradient, so that a data-parallel engine syncs it"""
    sync: bool = True
    """data-parallel: false runs this step's forward and backward without synchronising the replicas' gradients
    (DDP's and paddle's no_sync): each replica accumulates its own, and the next synchronised backward combines
    them. Such a step does not update."""
    replica_paths: dict[Annotated[int, Field(ge=0)], Annotated[list[str], Field(min_length=1)]] = {}
    """data-parallel: per replica (its rank), the path it runs instead of `path`, as a model whose forward
    branches on its input does (a layer some replicas use and others do not)"""


GradCheck = Literal["none", "zero", "none_or_zero", "nonzero", "reference"]
ValueCheck = Literal["unchanged", "changed", "reference"]


class Expect(_Strict):
    step: Union[int, list[int], Literal["all", "last"], None] = None
    """the step (index, negative from the end), steps, all or last that grad, value and loss look at"""
    grad: dict[str, GradCheck] = {}
    """per parameter, its gradient after backward: none, zero, none_or_zero, nonzero or reference (the oracle's)"""
    value: dict[str, ValueCheck] = {}
    """per parameter or statistic, its value after the step: unchanged, changed or reference"""
    loss: Literal["reference"] | None = None
    """the step's loss equals the oracle's"""
    raises: bool | None = None
    """whether the step (steps) raises an error: its error is then the observation, and the schedule goes on
    with the next step, as a training loop that skips a batch the framework refuses"""
    loss_differs: tuple[int, int] | None = None
    """two steps (forward-only, same batch, nothing updated between) whose losses must differ: a dropout
    layer active in the first and not in the second shows that way"""
    in_optimizer: dict[str, int] = {}
    """how many times the optimizer holds each parameter"""
    trainable: dict[str, bool] = {}
    """whether the framework regards each parameter as trainable"""
    decayed: dict[str, bool] = {}
    """whether the update program applies weight decay to the parameter (read where a run builds one)"""
    initial: dict[str, Literal["reference"]] = {}
    """per parameter or statistic of an `init: default` layer, its value as built: reference is the same
    constant as the oracle's default initialization (torch's constructor), or a random draw with the same mean
    and standard deviation within the sampling error of two draws of its size"""
    agree: list[str] = []
    """data-parallel: parameters or statistics that every replica holds the same value of after each step looked at"""
    when: dict[str, Union[str, list[str]]] = {}
    """only for the instances whose matrix or variant axes have these values"""

    @field_validator("step")
    @classmethod
    def _some_step(cls, step):
        if step == []:
            raise ValueError("an empty list names no step")
        return step

    @model_validator(mode="after")
    def _step_needed(self):
        if (self.grad or self.value or self.loss or self.raises is not None or self.agree) and self.step is None:
            raise ValueError("'grad', 'value', 'loss', 'raises' and 'agree' checks need 'step'")
        return self


def _distinct(values: list) -> list:
    seen = set()
    for value in values:
        if str(value) in seen:
            raise ValueError(f"duplicate value {str(value)!r}: instance ids would repeat")
        seen.add(str(value))
    return values


Axis = Annotated[list, Field(min_length=1), AfterValidator(_distinct)]  # empty would drop the case silently


class Tolerance(_Strict):
    rtol: NonNegative = 1e-4
    """relative tolerance of reference checks"""
    atol: NonNegative = 1e-5
    """absolute tolerance of reference checks"""


class Case(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    """unique, lowercase words joined by hyphens"""
    title: str
    """one line: what the case asks"""
    references: list[HttpUrl] = Field(min_length=1)
    """the pages and issues the case rests on"""
    matrix: dict[Literal["optimizer", "clear", "params", "container"], Axis] = {}
    """axes whose values each make an instance: optimizer (name), clear, params, container"""
    variants: dict[str, dict[str, object]] = {}
    """named override sets, one instance each: {name: {dotted.field: value}}"""
    model: Model
    """the tiny model"""
    optimizer: Optimizer
    """the optimizer over it"""
    clear: ClearMode = "default"
    """how gradients are cleared: the framework's default call, or explicitly to none or zeros"""
    seed: int = Field(0, ge=0, le=2**63 - 1)
    """fixes the initial values and the batches"""
    batch_size: int = Field(8, ge=2, le=4096)
    """samples per batch (BatchNorm's unbiased variance needs 2)"""
    tolerance: Tolerance = Tolerance()
    """of the reference checks"""
    cross_entropy: CrossEntropy | None = None
    """the loss: cross-entropy against integer class labels, instead of the mean squared error against a target"""
    data_parallel: DataParallel | None = None
    """the case trains data-parallel: its runs are those with that many replicas"""
    timeout: float | None = Field(None, gt=0, le=3600, allow_inf_nan=False)
    """seconds; overrides the run's per-case limit"""
    steps: list[Step] = Field(min_length=1, max_length=1000)
    """the schedule"""
    expect: list[Expect] = Field(min_length=1)
    """the checks on what was observed"""

    def _no_reference_after_dropout(self, n_steps: int):
        """A train-mode dropout draws its own random mask: no framework's matches the oracle's, so
        `reference` checks may look only at steps before the first one that runs a dropout in train
        mode (that step's own loss included)."""
        steps = schedule(self)
        random = next((i for i, s in enumerate(steps) if s.train and any(self.model.spec(n).dropout for n in s.path)), None)
        if random is None:
            return
        for e in self.expect:
            refs = [f"grad {n}" for n, w in e.grad.items() if w == "reference"] + \
                   [f"value {n}" for n, w in e.value.items() if w == "reference"] + (["loss"] if e.loss else [])
            late = [i for i in expect_steps(e.step, n_steps) if i >= random]
            if refs and late:
                raise ValueError(f"'{refs[0]}: reference' at step {late[0]}: step {random} runs a dropout in train mode, "
                                 f"whose random mask no framework shares with the oracle")

    @field_validator("variants")
    @classmethod
    def _variants_set_fields(cls, variants):
        for name, overrides in variants.items():
            for dotted in overrides:
                if str(dotted).split(".")[0] in ("id", "matrix", "variants"):
                    raise ValueError(f"variant {name!r} sets {dotted!r}: a variant overrides the case's model, "
                                     "optimizer, steps or checks, not its id, matrix or variants")
        return variants

    @model_validator(mode="after")
    def _few_instances(self):
        count = instance_count(self)
        if count > MAX_CASE_INSTANCES:
            raise ValueError(f"matrix and variants make {count} instances; at most {MAX_CASE_INSTANCES} per case")
        return self

    def _loss_fits(self):
        """A cross-entropy needs class scores (a vector) at the end of every path; an all-padding batch needs
        padding to be made of (an embedding's padding row, an ignored label)."""
        ce = self.cross_entropy
        for i, step in enumerate(self.steps):
            if ce is not None:
                out = self.model.shapes(step.path)[-1]
                if len(out) != 1 or out[0] < 2:
                    raise ValueError(f"steps.{i}: a cross-entropy takes class scores, a vector of 2 or more; "
                                     f"the path gives {'x'.join(map(str, out)) or 'an index'}")
                if isinstance(ce.ignore_index, int) and ce.ignore_index >= out[0]:
                    raise ValueError(f"ignore_index {ce.ignore_index} is a class of the {out[0]} the path scores: "
                                     f"a label at or above {out[0]} does not exist")
                if not step.reduce:
                    raise ValueError(f"steps.{i}: 'reduce: false' leaves the mean squared error per sample; "
                                     "a cross-entropy's reduction is its 'reduction'")
            if step.all_padding:
                first = self.model.spec(step.path[0])
                if not (first.padding_idx is not None or (ce is not None and ce.ignored_label() is not None)):
                    raise ValueError(f"steps.{i}: 'all_padding' needs an embedding with a padding_idx first on "
                                     f"the path, or a cross-entropy with an ignore_index")

    @property
    def replicas(self) -> int:
        """The replicas it trains on: the runs it belongs to are those with as many (run.takes)."""
        return self.data_parallel.replicas if self.data_parallel else 1

    def _replicas_fit(self):
        """Shares that split the batch among the replicas, replica paths of replicas that exist, and no BatchNorm
        on a path only some replicas run (its statistics would have no single-device equivalent)."""
        dp = self.data_parallel
        wants = [e for e in self.expect if e.agree] + [s for s in self.steps if s.replica_paths]
        synchronized = {n for n, layer in self.model.layers.items() if layer.synchronized}
        if dp is None:
            if wants or any(not s.sync for s in self.steps) or synchronized:
                raise ValueError("'replica_paths', 'agree', 'sync' and a 'synchronized' BatchNorm need "
                                 "'data_parallel'")
            return
        plain = {n for n, layer in self.model.layers.items() if layer.batchnorm and not layer.synchronized}
        if synchronized and plain:  # the oracle runs a replica on the global batch or on its own rows, not both
            raise ValueError(f"BatchNorm {sorted(plain)[0]!r} is not synchronized and {sorted(synchronized)[0]!r} is: "
                             f"a data-parallel case's BatchNorms are synchronized all or none")
        for i, step in enumerate(self.steps):
            if not step.sync and (step.update or not step.backward):
                raise ValueError(f"steps.{i}: 'sync: false' is a backward that accumulates: it takes no update")
        steps = schedule(self)
        unsynced = {n for n, step in enumerate(steps) if not step.sync}
        if any(e.grad and unsynced & set(expect_steps(e.step, len(steps))) for e in self.expect):
            raise ValueError("a 'sync: false' step's gradients are each replica's own: check them at the "
                             "synchronised backward that combines them")
        if dp.shares is not None and (len(dp.shares) != dp.replicas or sum(dp.shares) != self.batch_size):
            raise ValueError(f"'shares' {dp.shares}: {dp.replicas} shares summing to the batch size {self.batch_size}")
        if dp.shares is None and self.batch_size % dp.replicas:
            raise ValueError(f"batch size {self.batch_size} does not split equally among {dp.replicas} replicas: give 'shares'")
        for i, step in enumerate(self.steps):
            for rank, path in step.replica_paths.items():
                if unknown := [n for n in path if n not in self.model.layers]:
                    raise ValueError(f"steps.{i}.replica_paths: unknown layer {unknown[0]!r}")
                if rank >= dp.replicas:
                    raise ValueError(f"steps.{i}.replica_paths: replica {rank} of {dp.replicas} (ranks count from 0)")
                if any(self.model.spec(n).batchnorm for n in path + step.path):
                    raise ValueError(f"steps.{i}: a BatchNorm on a path only some replicas run has no single-device "
                                     "equivalent")
                if self.model.shapes(path)[-1] != self.model.shapes(step.path)[-1]:
                    raise ValueError(f"steps.{i}.replica_paths: replica {rank}'s path ends in another shape than 'path'")
            if step.batch_size is not None:
                raise ValueError(f"steps.{i}: a data-parallel step takes the case's batch, split by 'shares'")

    def cost(self) -> tuple[int, int]:
        """(numbers observed over the run: every parameter and statistic before and after each step and
        each step's gradients; numbers of the largest step's activations over the batch)."""
        sizes = sum(math.prod(self.model.layers[p.split(".")[0]].weight_shape())
                    if p.endswith(".weight") else self.model.layers[p.split(".")[0]].out_features()
                    for p in param_names(self.model))
        steps = sum(s.repeat for s in self.steps)
        widest = max((math.prod(shape) or 1) for s in self.steps for shape in self.model.shapes(s.path))
        return sizes * (2 * steps + 1), widest * self.batch_size

    @model_validator(mode="after")
    def _names_exist(self):
        layers = self.model.layers
        for name, layer in layers.items():
            if layer.tie and (layer.tie not in layers or layers[layer.tie].tie):
                raise ValueError(f"layer {name!r} ties to {layer.tie!r}, which is not a linear/batchnorm layer")
        params = set(param_names(self.model))
        for name in [*self.model.contained, *self.model.detach_after] + [n for s in self.steps for n in s.path]:
            if name not in layers:
                raise ValueError(f"unknown layer {name!r}")
        for i, step in enumerate(self.steps):
            for name in step.touch:
                if name not in layers or not [p for p in params if p.startswith(f"{name}.")]:
                    raise ValueError(f"steps.{i}.touch: {name!r} is no layer with parameters")
        for i, step in enumerate(self.steps):
            unsized = [n for n in step.path if layers[layers[n].tie or n].padding == "default"]
            if unsized:
                raise ValueError(f"steps.{i}: conv2d {unsized[0]!r} leaves its padding to default, so the size of its "
                                 f"output is the framework's: it can only be measured, on no path")
            for name in step.path[1:]:
                if layers[layers[name].tie or name].embedding:
                    raise ValueError(f"embedding {name!r} must be the first layer of a path: it takes integer indices")
            before = self.model.shapes(step.path)
            images = layer_kinds.image_batchnorms(self.model)
            for name, shape in zip(step.path, before):
                spec_name = layers[name].tie or name
                if layers[spec_name].batchnorm and (len(shape) == 3) != (spec_name in images):
                    raise ValueError(f"batchnorm {spec_name!r} takes {'images' if len(shape) == 3 else 'vectors'} "
                                     f"on a path, but the layer declared before it makes "
                                     f"{'vectors' if len(shape) == 3 else 'images'}: a framework fixes a "
                                     f"BatchNorm's rank when it is built (spec/layers.py image_batchnorms)")
        for where, names in [("frozen", self.model.frozen), *[(f"steps.{i}.freeze", s.freeze) for i, s in enumerate(self.steps)],
                             *[(f"steps.{i}.unfreeze", s.unfreeze) for i, s in enumerate(self.steps)]]:
            for name in names:
                if name not in layers and name not in params:
                    raise ValueError(f"unknown layer or parameter {name!r} in '{where}'")
        for name, layer in layers.items():
            if layer.momentum == "default" and not layer.batchnorm:
                raise ValueError(f"layer {name!r}: 'momentum' is a BatchNorm setting")
            if layer.eps == "default" and not layer.width:
                raise ValueError(f"layer {name!r}: 'eps' is a BatchNorm / LayerNorm setting")
        self._loss_fits()
        self._replicas_fit()
        if self.optimizer.no_decay_names and self.model.contained:
            raise ValueError("'no_decay_names' with layers in a container: a filter would see the container's "
                             "names (blocks.0.weight), which the reference does not model")
        named = [*self.optimizer.regularizers, *self.optimizer.no_decay, *self.optimizer.no_clip]
        named += self.optimizer.params if isinstance(self.optimizer.params, list) else []
        drawn = [n for n, layer in layers.items() if layer.init == "default"]
        for e in self.expect:
            named += [*e.grad, *e.value, *e.in_optimizer, *e.trainable, *e.decayed, *e.initial, *e.agree]
            for name in e.initial:
                if name.split(".")[0] not in drawn:
                    raise ValueError(f"'initial {name}': its layer starts from the case's values; "
                                     f"'initial' checks look at layers with 'init: default'")
            refs = [f"grad {n}" for n, w in e.grad.items() if w == "reference"] + \
                   [f"value {n}" for n, w in e.value.items() if w == "reference"] + (["loss"] if e.loss else [])
            if drawn and refs:
                raise ValueError(f"'{refs[0]}: reference': layer {drawn[0]!r} starts from the framework's own draw "
                                 f"('init: default'), which no oracle value matches one by one")
            for axis in e.when:
                if axis not in self.matrix and not (axis == "variant" and self.variants):
                    raise ValueError(f"'when' names {axis!r}, which is not an axis of this case")
        for name in named:
            if name not in params:
                raise ValueError(f"unknown parameter {name!r} (known: {', '.join(sorted(params))})")
        n_steps = sum(s.repeat for s in self.steps)
        if n_steps > 1000:
            raise ValueError(f"{n_steps} steps after repeat; at most 1000")
        for e in self.expect:
            for step in [*(e.step if isinstance(e.step, list) else [e.step]), *(e.loss_differs or ())]:
                if isinstance(step, int) and not -n_steps <= step < n_steps:
                    raise ValueError(f"step {step} out of range: the case has {n_steps} steps")
        self._no_reference_after_dropout(n_steps)
        observed, activations = self.cost()
        if observed > MAX_OBSERVED:
            raise ValueError(f"the run would observe {observed:,} numbers (parameters x steps); at most {MAX_OBSERVED:,}")
        if activations > MAX_ACTIVATIONS:
            raise ValueError(f"a step's activations hold {activations:,} numbers (batch x widest layer); "
                             f"at most {MAX_ACTIVATIONS:,}")
        return self


# The optimizer fields each optimizer uses: only those can be left to a framework's default.
OPTIMIZER_FIELDS = {"sgd": ("lr", "weight_decay"), "momentum": ("lr", "weight_decay", "momentum"),
                    "adam": ("lr", "weight_decay", "betas", "eps"), "adamw": ("lr", "weight_decay", "betas", "eps")}


def defaults_of(model: Model, optimizer: Optimizer) -> list[str]:
    """The settings a case leaves to the framework ("default"), named `optimizer.<field>` or
    `<layer>.<field>`, and the dropout rates it writes positionally (`<layer>.rate`): each one's value is
    observed and compared with the reference's (a bias as true or false, a rate as the fraction measured, a
    padding as the pixels added per side)."""
    out = [f"optimizer.{f}" for f in OPTIMIZER_FIELDS[optimizer.name] if getattr(optimizer, f) == "default"]
    out += [f"{name}.{f}" for name, layer in model.layers.items() if not layer.tie
            for f in ("momentum", "eps", "bias", "padding") if getattr(layer, f) == "default"]
    return out + [f"{name}.rate" for name, layer in model.layers.items() if layer.positional]


# What a case may ask beyond the core loop; an adapter lists those it expresses (Runner.features),
# and a case needing one it lacks is unsupported, never run with the setting silently dropped.
FEATURES = {"defaults": "settings left to the framework's defaults",
            "layernorm": "LayerNorm layers",
            "embedding": "Embedding layers (integer inputs)",
            "conv2d": "Conv2d layers (image inputs)",
            "dropout": "Dropout layers",
            "freeze-steps": "freezing or unfreezing between steps",
            "lr-schedule": "learning-rate changes between steps",
            "no-decay": "excluding parameters from weight decay",
            "no-decay-names": "excluding parameters from weight decay by a name filter",
            "no-decay-ndim": "excluding parameters from weight decay by their number of dimensions",
            "clip-norm": "per-variable norm clipping",
            "no-clip": "excluding parameters from clipping",
            "init-default": "layers left to the framework's own initialization",
            "per-sample-loss": "a backward pass on a loss left per sample (not reduced to a scalar)",
            "cross-entropy": "a cross-entropy loss against class labels",
            "positional-args": "layer arguments written positionally",
            "data-parallel": "data-parallel training on several replicas",
            "touch": "a loss that adds parameters times zero (the unused-parameter workaround)",
            "no-sync": "data-parallel backward passes that do not synchronise (no_sync)",
            "sync-batchnorm": "BatchNorm synchronised over the replicas (global statistics)"}


def features_of(case: Case) -> list[str]:
    used = {"defaults": bool(defaults_of(case.model, case.optimizer)),
            "layernorm": any(layer.layernorm for layer in case.model.layers.values()),
            "embedding": any(layer.embedding for layer in case.model.layers.values()),
            "conv2d": any(layer.conv2d for layer in case.model.layers.values()),
            "dropout": any(layer.dropout for layer in case.model.layers.values()),
            "freeze-steps": any(s.freeze or s.unfreeze for s in case.steps),
            "lr-schedule": any(s.lr is not None for s in case.steps),
            "no-decay": bool(case.optimizer.no_decay),
            "no-decay-names": bool(case.optimizer.no_decay_names),
            "no-decay-ndim": case.optimizer.no_decay_ndim_below is not None,
            "clip-norm": case.optimizer.clip_norm is not None,
            "no-clip": bool(case.optimizer.no_clip),
            "init-default": any(layer.init == "default" for layer in case.model.layers.values()),
            "per-sample-loss": any(not s.reduce for s in case.steps),
            "cross-entropy": case.cross_entropy is not None,
            "positional-args": any(layer.positional for layer in case.model.layers.values()),
            "data-parallel": case.data_parallel is not None,
            "touch": any(s.touch for s in case.steps),
            "no-sync": any(not s.sync for s in case.steps),
            "sync-batchnorm": any(layer.synchronized for layer in case.model.layers.values())}
    return [f for f in FEATURES if used[f]]


def schedule(case: Case) -> list[Step]:
    """Steps with `repeat` unrolled."""
    return [step for step in case.steps for _ in range(step.repeat)]


def expect_steps(spec_step, n: int) -> list[int]:
    """The step indices an expectation's `step` names in a schedule of n steps (none without one)."""
    if spec_step is None:
        return []
    if spec_step == "all":
        return list(range(n))
    if spec_step == "last":
        return [n - 1]
    return [s % n for s in (spec_step if isinstance(spec_step, list) else [spec_step])]


def param_names(model: Model) -> list[str]:
    """Canonical parameter names, `layer.role`; tied layers add no names of their own."""
    return [f"{name}.{role}" for name, layer in model.layers.items() if not layer.tie
            for role in layer.param_roles()]


class CaseFile(_Strict):
    topic: Literal[TOPICS]
    cases: list[Case]


class Instance(BaseModel):
    """One concrete run of a case: the matrix and variants resolved."""
    id: str          # base id plus [axis values], e.g. decay-skips-unused[sgd,default]
    case: Case       # with matrix/variants applied
    topic: str
    axes: dict[str, str]
    source: str      # file:line of the case



def instance_count(case: Case) -> int:
    return math.prod(len(values) for values in case.matrix.values()) * max(len(case.variants), 1)

