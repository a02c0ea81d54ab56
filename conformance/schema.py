"""Load and validate the YAML spec and the known-variant files.

Every error is a `SpecError` whose message is one line: `file:line: what is wrong`.
Only `yaml.SafeLoader` is used: nothing in a spec is executed.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import math
import os
import re
import stat
from pathlib import Path
from typing import Annotated, Literal, Optional, Union

import yaml
from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, HttpUrl, ValidationError, field_validator,
                      model_validator)

PACKAGE_DIR = Path(__file__).parent
SPEC_DIR = PACKAGE_DIR / "spec"
# one room per framework: runners/<framework>/ holds its adapter, known.yaml and confirm/ snippets
RUNNERS_DIR = PACKAGE_DIR / "runners"

TOPICS = ("seeds", "gradient_flow", "weight_decay", "optimizer_state", "batchnorm", "layernorm",
          "embedding", "conv", "dropout", "registration", "clipping", "accumulation", "freezing", "defaults", "schedules")
# Matrix axes and the case field each one sets.
AXES = {"optimizer": ("optimizer", "name"), "clear": ("clear",),
        "params": ("optimizer", "params"), "container": ("model", "container")}
LINEAR_PARAMS = ("weight", "bias")
BATCHNORM_PARAMS = ("weight", "bias", "running_mean", "running_var")


class SpecError(Exception):
    """A spec or known-variant file is malformed; the message is one line, even when it quotes a key
    or value with line breaks in it (they are shown escaped)."""

    def __init__(self, message: str):
        super().__init__(str(message).replace("\r", "\\r").replace("\n", "\\n"))


# Limits against hostile files; the shipped ones are under 8 KB and nest under 10 levels.
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 64  # well below where construction would hit Python's recursion limit
# A few bytes of matrix can describe millions of instances; the shipped spec has 133.
MAX_CASE_INSTANCES = 1000
MAX_INSTANCES = 20000


# ---------------------------------------------------------------- YAML with line numbers
class _LineDict(dict):
    line = 0
    key_lines: dict


class _LineList(list):
    line = 0
    item_lines: list


class _Loader(yaml.SafeLoader):
    depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            # Aliases of lists or mappings let a few bytes describe an exponentially large document.
            target = self.anchors.get(event.anchor)
            if target is not None and not isinstance(target, yaml.ScalarNode):
                raise SpecError(f"{self.name}:{line}: alias *{event.anchor} refers to a list or mapping; "
                                "only plain values may be aliased")
            return super().compose_node(parent, index)
        if event.tag is not None:  # a spec needs none, and a tag of the wrong kind crashes the constructor
            raise SpecError(f"{self.name}:{line}: YAML tags are not allowed ({event.tag})")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise SpecError(f"{self.name}:{line}: nested more than {MAX_DEPTH} levels deep")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:  # a plain scalar that looks typed but is not: 0b_, 2001-13-45
            raise SpecError(f"{self.name}:{node.start_mark.line + 1}: invalid value: {exc}") from None


def _mapping(loader: _Loader, node: yaml.MappingNode) -> _LineDict:
    loader.flatten_mapping(node)
    out = _LineDict()
    out.line, out.key_lines = node.start_mark.line + 1, {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if not isinstance(key_node, yaml.ScalarNode):  # a list or mapping key is unhashable
            raise SpecError(f"{loader.name}:{line}: a mapping key must be a plain value, not a list or mapping")
        key = loader.construct_object(key_node, deep=True)
        if key in out:  # PyYAML would silently keep the last one
            raise SpecError(f"{loader.name}:{line}: duplicate key {key!r}")
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = line
    return out


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> _LineList:
    out = _LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line, out.item_lines = node.start_mark.line + 1, [c.start_mark.line + 1 for c in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def _read(path: Path) -> str:
    try:
        # O_NONBLOCK: opening a FIFO would otherwise wait for a writer
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # /dev/zero, a FIFO: endless
                raise SpecError(f"{path}: not a regular file")
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise SpecError(f"{path}: larger than {MAX_FILE_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def load_yaml(path: Path):
    text = _read(path)
    loader = None
    try:
        loader = _Loader(text)
        loader.name = str(path)
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        raise SpecError(f"{path}:{line}: YAML syntax error: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: YAML error: {str(exc).splitlines()[0]}") from None
    finally:
        if loader is not None:
            loader.dispose()


def _line_of(data, loc) -> int:
    """Deepest line number known along a pydantic error location."""
    line = getattr(data, "line", 0)
    for key in loc:
        if isinstance(data, _LineDict) and key in data:
            line, data = data.key_lines[key], data[key]
        elif isinstance(data, _LineList) and isinstance(key, int) and key < len(data):
            line, data = data.item_lines[key], data[key]
        # other loc parts name union members or validators: skip them
    return line


def _describe(err: dict) -> str:
    # parts that name a union member or a validator, not a key
    loc = ".".join(str(part) for part in err["loc"]
                   if not str(part).startswith(("function-", "literal[", "constrained-", "tuple[")))
    if err["type"] == "extra_forbidden":
        return f"unknown key {loc!r}"
    if err["type"] == "missing":
        return f"missing key {loc!r}"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def _validate(model: type[BaseModel], data, path: Path, data_root=None):
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        line = _line_of(data_root if data_root is not None else data, err["loc"])
        raise SpecError(f"{path}:{line}: {_describe(err)}") from None


# ---------------------------------------------------------------- the spec's vocabulary
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


Width = Annotated[int, Field(ge=1, le=1024)]  # cases are tiny models; bounds keep the oracle quick
# Hyperparameters: finite, and in the range where the update rule means something.
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
DecayRate = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]  # momentum, Adam's betas
# "default": the framework's constructor decides (the adapter leaves the argument out); the oracle
# uses the reference's default (REFERENCE_DEFAULTS in reference.py: torch's constructors)
Default = Literal["default"]


Kernel = Annotated[int, Field(ge=1, le=7, multiple_of=1)]
KINDS = ("linear", "conv2d", "batchnorm", "layernorm", "embedding", "dropout", "tie")


class Layer(_Strict):
    """Exactly one of: linear [in, out] (flattens a channels x height x width input, in that order),
    conv2d [in channels, out channels, kernel] (stride 1, zero padding kernel // 2: the image keeps
    its size; weight laid out out x in x kh x kw), batchnorm features (over the channels of an image),
    layernorm features (over the last axis, with weight and bias), embedding [rows, dim] (looks up
    one integer index per sample; the first layer of any path it is on), dropout rate (no parameters;
    zeroes inputs at random in train mode and scales the rest by 1 / (1 - rate)), tie (alias of
    another layer)."""
    linear: tuple[Width, Width] | None = None
    conv2d: tuple[Width, Width, Kernel] | None = None
    batchnorm: Width | None = None
    layernorm: Width | None = None
    embedding: tuple[Width, Width] | None = None
    padding_idx: Annotated[int, Field(ge=0)] | None = None  # embedding: the row that never gets a gradient
    dropout: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] | None = None
    tie: str | None = None
    bias: bool = True
    # BatchNorm: weight of the new batch in the running statistics
    momentum: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | Default = 0.1
    eps: Positive | Default = 1e-5  # BatchNorm, LayerNorm

    @model_validator(mode="after")
    def _one_kind(self):
        if sum(getattr(self, k) is not None for k in KINDS) != 1:
            raise ValueError(f"a layer needs exactly one of {', '.join(repr(k) for k in KINDS)}")
        if self.conv2d and self.conv2d[2] % 2 == 0:
            raise ValueError("a conv2d kernel must be odd: the image keeps its size with padding kernel // 2")
        if self.padding_idx is not None and not (self.embedding and self.padding_idx < self.embedding[0]):
            raise ValueError("'padding_idx' needs an embedding layer with more rows than it")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in KINDS if getattr(self, k) is not None)

    @property
    def width(self) -> int:
        """Features in and out of a normalisation layer."""
        return self.batchnorm or self.layernorm

    def param_roles(self) -> tuple[str, ...]:
        if self.batchnorm:
            return BATCHNORM_PARAMS
        if self.embedding:
            return ("weight",)
        if self.dropout:
            return ()
        return LINEAR_PARAMS if self.bias or self.layernorm else ("weight",)

    def weight_shape(self) -> tuple[int, ...]:
        if self.conv2d:
            c_in, c_out, k = self.conv2d
            return (c_out, c_in, k, k)
        return tuple(self.linear or self.embedding or (self.width,))

    def out_features(self) -> int:
        """Features (channels of an image) this layer gives."""
        return self.linear[1] if self.linear else self.conv2d[1] if self.conv2d else \
            self.embedding[1] if self.embedding else self.width


Container = Literal["attributes", "framework_list", "plain_list", "framework_dict",
                    "plain_dict", "plain_tuple"]
ClearMode = Literal["default", "none", "zeros"]


class Model(_Strict):
    layers: dict[str, Layer]
    # Layers named in `contained` are held in `container`; the others are plain attributes.
    container: Container = "attributes"
    contained: list[str] = []
    frozen: list[str] = []        # "layer" or "layer.param": marked not trainable
    detach_after: list[str] = []  # outputs of these layers pass through stop_gradient / detach
    image_size: int = Field(4, ge=1, le=16)  # height and width of the images a conv2d path starts with

    def spec(self, layer: str) -> Layer:
        """The layer's own spec, or for a tie the spec of the layer it ties to."""
        return self.layers[self.layers[layer].tie or layer]

    def shapes(self, path: list[str]) -> list[tuple[int, ...]]:
        """The activation shape of one sample before the path and after each of its layers (an
        embedding's input: () for one index); ValueError where one layer cannot take the last."""
        first = self.spec(path[0])
        shape = () if first.embedding else (first.conv2d[0], self.image_size, self.image_size) if first.conv2d \
            else (first.linear[0] if first.linear else first.width,)
        out = [shape]
        for name in path:
            spec = self.spec(name)
            if spec.embedding:
                ok = shape == ()
            elif spec.linear:
                ok = math.prod(shape) == spec.linear[0] and shape != ()
            elif spec.conv2d:
                ok = len(shape) == 3 and shape[0] == spec.conv2d[0]
            elif spec.batchnorm:
                ok = len(shape) in (1, 3) and shape[0] == spec.batchnorm
            elif spec.dropout:
                ok = shape != ()
            else:
                ok = shape == (spec.layernorm,)
            if not ok:
                raise ValueError(f"layer {name!r} ({spec.kind}) cannot take a {'x'.join(map(str, shape)) or 'index'} input")
            if not spec.dropout:  # dropout keeps the shape
                shape = (spec.out_features(), *shape[1:]) if spec.conv2d or spec.width else (spec.out_features(),)
            out.append(shape)
        return out


class Optimizer(_Strict):
    name: Literal["sgd", "momentum", "adam", "adamw"]
    lr: NonNegative | Default = 0.1
    weight_decay: NonNegative | Default = 0.0  # coupled L2 for sgd/momentum/adam, decoupled for adamw
    momentum: DecayRate | Default = 0.9
    betas: tuple[DecayRate, DecayRate] | Default = (0.9, 0.999)
    eps: Positive | Default = 1e-8
    # default: the framework's idiomatic parameter collection of the model;
    # all: every piece of model state, BatchNorm statistics included; or explicit names.
    params: Union[Literal["default", "all"], list[str]] = "default"
    regularizers: dict[str, NonNegative] = {}  # per-parameter decay coefficient, overrides weight_decay
    no_decay: list[str] = []  # excluded from weight decay the framework's own way (groups, exclude lists)
    clip_global_norm: Positive | None = None
    clip_norm: Positive | None = None  # each gradient clipped to this L2 norm on its own
    no_clip: list[str] = []  # left out of clipping (and of the global norm): Paddle's need_clip=False

    @model_validator(mode="after")
    def _one_clipping(self):
        if self.clip_global_norm is not None and self.clip_norm is not None:
            raise ValueError("'clip_global_norm' and 'clip_norm' exclude each other")
        if self.no_clip and self.clip_global_norm is None and self.clip_norm is None:
            raise ValueError("'no_clip' needs 'clip_global_norm' or 'clip_norm'")
        return self


class Step(_Strict):
    path: list[str] = Field(min_length=1)
    batch: int | None = Field(None, ge=0)  # input batch index; default: the step's index
    clear: bool = True        # clear gradients before this step
    backward: bool = True
    update: bool = True
    train: bool = True
    repeat: int = Field(1, ge=1, le=1000)
    # before this step, once the optimizer exists (a fine-tuning schedule): layers or parameters to
    # mark not trainable / trainable again; a layer name uses the framework's layer-level switch
    freeze: list[str] = []
    unfreeze: list[str] = []
    lr: NonNegative | None = None  # the learning rate from this step on (a schedule)


GradCheck = Literal["none", "zero", "none_or_zero", "nonzero", "reference"]
ValueCheck = Literal["unchanged", "changed", "reference"]


class Expect(_Strict):
    step: Union[int, list[int], Literal["all", "last"], None] = None
    grad: dict[str, GradCheck] = {}
    value: dict[str, ValueCheck] = {}
    loss: Literal["reference"] | None = None
    # two steps (forward-only, same batch, nothing updated between) whose losses must differ: a
    # dropout layer active in the first and not in the second shows that way
    loss_differs: tuple[int, int] | None = None
    in_optimizer: dict[str, int] = {}  # how many times the optimizer holds each parameter
    trainable: dict[str, bool] = {}
    # does the update program apply weight decay to the parameter (read where a run builds one)
    decayed: dict[str, bool] = {}
    when: dict[str, Union[str, list[str]]] = {}

    @model_validator(mode="after")
    def _step_needed(self):
        if (self.grad or self.value or self.loss) and self.step is None:
            raise ValueError("'grad', 'value' and 'loss' checks need 'step'")
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
    atol: NonNegative = 1e-5


class Case(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    references: list[HttpUrl] = Field(min_length=1)
    matrix: dict[Literal["optimizer", "clear", "params", "container"], Axis] = {}
    # Named override sets, one instance each: {name: {dotted.field: value}}
    variants: dict[str, dict[str, object]] = {}
    model: Model
    optimizer: Optimizer
    clear: ClearMode = "default"
    seed: int = Field(0, ge=0)  # numpy refuses negative seeds
    batch_size: int = Field(8, ge=2, le=4096)  # BatchNorm's unbiased variance needs 2
    tolerance: Tolerance = Tolerance()
    timeout: float | None = Field(None, gt=0, le=3600, allow_inf_nan=False)  # seconds; overrides the run's default
    steps: list[Step] = Field(min_length=1, max_length=1000)
    expect: list[Expect] = Field(min_length=1)

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

    @model_validator(mode="after")
    def _few_instances(self):
        count = instance_count(self)
        if count > MAX_CASE_INSTANCES:
            raise ValueError(f"matrix and variants make {count} instances; at most {MAX_CASE_INSTANCES} per case")
        return self

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
        for step in self.steps:
            for name in step.path[1:]:
                if layers[layers[name].tie or name].embedding:
                    raise ValueError(f"embedding {name!r} must be the first layer of a path: it takes integer indices")
            self.model.shapes(step.path)
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
        named = [*self.optimizer.regularizers, *self.optimizer.no_decay, *self.optimizer.no_clip]
        named += self.optimizer.params if isinstance(self.optimizer.params, list) else []
        for e in self.expect:
            named += [*e.grad, *e.value, *e.in_optimizer, *e.trainable, *e.decayed]
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
        return self


# The optimizer fields each optimizer uses: only those can be left to a framework's default.
OPTIMIZER_FIELDS = {"sgd": ("lr", "weight_decay"), "momentum": ("lr", "weight_decay", "momentum"),
                    "adam": ("lr", "weight_decay", "betas", "eps"), "adamw": ("lr", "weight_decay", "betas", "eps")}


def defaults_of(model: Model, optimizer: Optimizer) -> list[str]:
    """The settings a case leaves to the framework ("default"), named `optimizer.<field>` or
    `<layer>.<field>`: each one's value is observed and compared with the reference's default."""
    out = [f"optimizer.{f}" for f in OPTIMIZER_FIELDS[optimizer.name] if getattr(optimizer, f) == "default"]
    return out + [f"{name}.{f}" for name, layer in model.layers.items() if not layer.tie
                  for f in ("momentum", "eps") if getattr(layer, f) == "default"]


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
            "clip-norm": "per-variable norm clipping",
            "no-clip": "excluding parameters from clipping"}


def features_of(case: Case) -> list[str]:
    used = {"defaults": bool(defaults_of(case.model, case.optimizer)),
            "layernorm": any(layer.layernorm for layer in case.model.layers.values()),
            "embedding": any(layer.embedding for layer in case.model.layers.values()),
            "conv2d": any(layer.conv2d for layer in case.model.layers.values()),
            "dropout": any(layer.dropout for layer in case.model.layers.values()),
            "freeze-steps": any(s.freeze or s.unfreeze for s in case.steps),
            "lr-schedule": any(s.lr is not None for s in case.steps),
            "no-decay": bool(case.optimizer.no_decay),
            "clip-norm": case.optimizer.clip_norm is not None,
            "no-clip": bool(case.optimizer.no_clip)}
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


# ---------------------------------------------------------------- loading
def _set_dotted(data: dict, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        data = data[key]
    data[last] = value


def instance_count(case: Case) -> int:
    return math.prod(len(values) for values in case.matrix.values()) * max(len(case.variants), 1)


def expand(case: Case, topic: str, source: str) -> list[Instance]:
    axes = list(case.matrix.items())
    if case.variants:
        axes.append(("variant", list(case.variants)))
    if not axes:
        return [Instance(id=case.id, case=case, topic=topic, axes={}, source=source)]
    out = []
    for combo in itertools.product(*(values for _, values in axes)):
        data = case.model_dump()  # matrix and variants stay: `when` is checked against them
        chosen = {}
        for (axis, _), value in zip(axes, combo):
            chosen[axis] = str(value)
            if axis == "variant":
                for dotted, override in case.variants[value].items():
                    try:
                        _set_dotted(data, dotted, copy.deepcopy(override))
                    except (KeyError, TypeError):
                        raise SpecError(f"{source}: variant {value!r} sets unknown field {dotted!r}") from None
            else:
                _set_dotted(data, ".".join(AXES[axis]), value)
        try:
            concrete = Case.model_validate(data)
        except ValidationError as exc:
            raise SpecError(f"{source}: {case.id}[{','.join(chosen.values())}]: "
                            f"{_describe(exc.errors()[0])}") from None
        out.append(Instance(id=f"{case.id}[{','.join(chosen.values())}]", case=concrete,
                            topic=topic, axes=chosen, source=source))
    return out


def load_spec(spec_dir: Path = SPEC_DIR) -> list[Instance]:
    files = sorted(Path(spec_dir).glob("*.yaml"))
    if not files:
        raise SpecError(f"{spec_dir}: no spec files (*.yaml)")
    cases, seen, total = [], {}, 0
    for path in files:
        raw = load_yaml(path)
        parsed = _validate(CaseFile, raw, path)
        for index, case in enumerate(parsed.cases):
            line = raw["cases"].item_lines[index]
            if case.id in seen:
                raise SpecError(f"{path}:{line}: duplicate case id {case.id!r} (first at {seen[case.id]})")
            seen[case.id] = f"{path.name}:{line}"
            total += instance_count(case)
            if total > MAX_INSTANCES:  # counted before any is built
                raise SpecError(f"{path}:{line}: the spec makes over {MAX_INSTANCES} instances by this case")
            cases.append((case, parsed.topic, f"{path.name}:{line}"))
    instances = [inst for case, topic, source in cases for inst in expand(case, topic, source)]
    return sorted(instances, key=lambda inst: TOPICS.index(inst.topic))  # seeds first


def spec_hash(spec_dir: Path = SPEC_DIR) -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(spec_dir).glob("*.yaml")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


class KnownVariant(_Strict):
    """One semantic variant in force for a framework: a name from the closed vocabulary
    (conformance/variants.py), the framework versions it holds for, why, and where it is written down."""
    variant: str
    versions: str = ""        # PEP 440 specifier over the framework version; empty: all
    # the runs it holds for (conformance/runners/base.py MODES, APIS); empty: all of them
    modes: list[Literal["eager", "graph"]] = []
    apis: list[Literal["loop", "trainer"]] = []
    # in graph mode, the backends it holds for (an adapter's `backends`); empty: all. No bound on eager
    backends: list[str] = []
    reason: str
    # the upstream page that states it; null for a behaviour the suite found and no page states
    # (its divergences are then "explained, undocumented")
    link: Optional[HttpUrl]
    snippet: str              # the standalone script that confirms it, relative to the repository

    @field_validator("variant")
    @classmethod
    def _known_name(cls, name):
        from .variants import VARIANTS
        if name not in VARIANTS:
            raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
        return name

    @field_validator("versions")
    @classmethod
    def _specifier(cls, versions):
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        try:
            SpecifierSet(versions)
        except InvalidSpecifier:
            raise ValueError(f"invalid version specifier {versions!r}") from None
        return versions

    @field_validator("snippet")
    @classmethod
    def _confirming_script(cls, snippet):
        room = re.fullmatch(r"conformance/runners/[a-z]+/confirm/[\w.-]+\.py", snippet)
        if not room or ".." in snippet:
            raise ValueError(f"snippet {snippet!r}: expected a conformance/runners/<framework>/confirm/<name>.py path")
        return snippet

    def holds_for(self, version: str, mode: str = "eager", api: str = "loop", backend: str = "") -> bool:
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion, Version
        if self.modes and mode not in self.modes or self.apis and api not in self.apis:
            return False
        if self.backends and mode == "graph" and backend not in self.backends:
            return False
        try:
            return not self.versions or Version(version) in SpecifierSet(self.versions, prereleases=True)
        except InvalidVersion:
            return False


class KnownFile(_Strict):
    variants: list[KnownVariant] = []

    @model_validator(mode="after")
    def _once_each(self):
        names = [v.variant for v in self.variants]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"variant {twice[0]!r} is listed twice")
        return self


def load_known(framework: str, rooms: Path = RUNNERS_DIR) -> list[KnownVariant]:
    """The framework's semantic variants (all versions), from <rooms>/<framework>/known.yaml; an
    absent file means none."""
    path = Path(rooms) / framework / "known.yaml"
    if not path.exists():
        return []
    raw = load_yaml(path)
    return _validate(KnownFile, raw if raw is not None else {}, path).variants


def profile(known: list[KnownVariant], version: str, mode: str = "eager", api: str = "loop",
            backend: str = "") -> list[KnownVariant]:
    """The variants in force for one run: a framework version in a mode (compiled by a backend),
    through an api."""
    return [v for v in known if v.holds_for(version, mode, api, backend)]
