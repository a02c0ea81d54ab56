"""The layer kinds, declared once: what each holds, what it takes and gives, and the decisions every
adapter and the oracle would otherwise re-derive (which BatchNorm normalises images, where an image
is flattened before a linear layer).

Shapes are one sample's activation: () for an integer index, (features,) for a vector, (channels,
height, width) for an image. Canonical parameter layouts: a linear weight is (in, out) (y = x @ W + b),
a conv weight (out, in, kh, kw), an embedding table (rows, dim), a norm layer's vectors (features,).
"""
from __future__ import annotations

from typing import NamedTuple


class Kind(NamedTuple):
    roles: tuple[str, ...]  # canonical parameter roles, in order ("bias" dropped by bias: false)
    takes: str              # "vector" | "image" | "index" | "vector or image" | "any"
    keeps_shape: bool       # gives the shape it takes (norms, dropout)
    statistics: tuple[str, ...] = ()  # roles that are running statistics: moved by forward, never trained


KINDS: dict[str, Kind] = {
    "linear": Kind(("weight", "bias"), "vector or image", False),  # an image is flattened first, channels first
    "conv2d": Kind(("weight", "bias"), "image", False),  # stride 1, zero padding kernel // 2: same size
    "batchnorm": Kind(("weight", "bias", "running_mean", "running_var"), "vector or image", True,
                      statistics=("running_mean", "running_var")),
    "layernorm": Kind(("weight", "bias"), "vector", True),  # over the last axis, always with weight and bias
    "embedding": Kind(("weight",), "index", False),  # the first layer of any path it is on
    "dropout": Kind((), "any", True),
}
OPTIONAL_BIAS = ("linear", "conv2d")  # kinds whose `bias: false` drops the bias


def roles(layer) -> tuple[str, ...]:
    kind = KINDS[layer.kind]
    return tuple(r for r in kind.roles if r != "bias" or layer.bias or layer.kind not in OPTIONAL_BIAS)


def out_features(layer) -> int:
    """Features (an image's channels) the layer gives; a shape-keeping layer gives its width."""
    return layer.linear[1] if layer.linear else layer.conv2d[1] if layer.conv2d else \
        layer.embedding[1] if layer.embedding else layer.batchnorm or layer.layernorm


def weight_shape(layer) -> tuple[int, ...]:
    if layer.conv2d:
        c_in, c_out, k = layer.conv2d
        return (c_out, c_in, k, k)
    return tuple(layer.linear or layer.embedding or (layer.batchnorm or layer.layernorm,))


def input_shape(model, layer_name: str) -> tuple[int, ...]:
    """The shape a path that starts at this layer feeds it."""
    first = model.spec(layer_name)
    if first.embedding:
        return ()
    if first.conv2d:
        return (first.conv2d[0], model.image_size, model.image_size)
    return (first.linear[0] if first.linear else first.batchnorm or first.layernorm,)


def _takes(layer, shape: tuple[int, ...]) -> bool:
    if layer.embedding:
        return shape == ()
    if layer.linear:
        return shape != () and _size(shape) == layer.linear[0]
    if layer.conv2d:
        return len(shape) == 3 and shape[0] == layer.conv2d[0]
    if layer.batchnorm:
        return len(shape) in (1, 3) and shape[0] == layer.batchnorm
    if layer.dropout:
        return shape != ()
    return shape == (layer.layernorm,)


def _size(shape) -> int:
    size = 1
    for n in shape:
        size *= n
    return size


def shapes(model, path: list[str]) -> list[tuple[int, ...]]:
    """The shape before the path and after each of its layers; ValueError where a layer cannot take
    what the one before gives."""
    shape = input_shape(model, path[0])
    out = [shape]
    for name in path:
        layer = model.spec(name)
        if not _takes(layer, shape):
            raise ValueError(f"layer {name!r} ({layer.kind}) cannot take a {'x'.join(map(str, shape)) or 'index'} input")
        if not layer.dropout:
            keeps_rank = layer.conv2d or KINDS[layer.kind].keeps_shape
            shape = (out_features(layer), *shape[1:]) if keeps_rank else (out_features(layer),)
        out.append(shape)
    return out


def image_batchnorms(model) -> frozenset[str]:
    """The BatchNorm layers that normalise images (BatchNorm2d and its kin), the others vectors
    (BatchNorm1d). A framework fixes this when the layer is built, before any path runs, so it is
    read from the declared layer order as a user's Sequential-like definition reads: a BatchNorm
    normalises images when the nearest layer declared before it that makes features (conv2d, linear,
    embedding) is a conv2d. The spec refuses a case whose paths feed a BatchNorm the other rank
    (spec.model.Case), so every adapter and the oracle agree."""
    images, image = set(), False
    for name, layer in model.layers.items():
        layer = model.spec(name)
        if layer.conv2d or layer.linear or layer.embedding:
            image = layer.conv2d is not None
        elif layer.batchnorm and image and not model.layers[name].tie:
            images.add(name)
    return frozenset(images)


def flatten_before(model, path: list[str]) -> set[int]:
    """Positions in the path of the linear layers that take an image: the adapter flattens it first,
    channels first (torch `flatten(1)`, paddle `flatten(x, 1)`, MindSpore `ops.flatten`; Keras
    `Flatten` is channels-last, so its adapter permutes that Dense's rows)."""
    before = shapes(model, path)
    return {i for i, name in enumerate(path) if model.spec(name).linear and len(before[i]) > 1}
