"""Weight decay: how an optimizer applies it, and what a decay filter over the parameters' names sees
(the reference: torch's named_parameters(), `layer.role`)."""
from __future__ import annotations

from ...spec import layers as layer_kinds
from . import COMPILED, variant

GAMMA_BETA = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean", "running_var": "moving_variance"}
KERAS_WEIGHTS = {"linear": {"weight": "kernel"}, "conv2d": {"weight": "kernel"}, "embedding": {"weight": "embeddings"},
                 "batchnorm": GAMMA_BETA, "layernorm": GAMMA_BETA}
# Paddle's generated names: `<layer class in snake case>_<count>.<w_0 | b_0 | w_1 | w_2>`
GENERATED_PREFIX = {"linear": "linear", "conv2d": "conv2d", "embedding": "embedding", "layernorm": "layer_norm"}
GENERATED_SUFFIX = {"weight": "w_0", "bias": "b_0", "running_mean": "w_1", "running_var": "w_2"}


def named_as(form: str, roles: dict):
    """A filter that sees `form` filled with the layer and the framework's name of the role (`roles`, by layer
    kind; a role not listed keeps its own name)."""
    return lambda model, optimizer, layer, role: form.format(
        layer=layer, name=roles.get(model.layers[layer].kind, {}).get(role, role))


def generated_name(model, optimizer, layer, role):
    """Paddle AdamW's apply_decay_param_fun: each layer class counted from 0 in the order the layers are built."""
    if optimizer.name != "adamw":
        return f"{layer}.{role}"
    prefix = _generated_prefix(model, layer)
    count = [n for n in model.layers if _generated_prefix(model, n) == prefix].index(layer)
    return f"{prefix}_{count}.{GENERATED_SUFFIX[role]}"


def _generated_prefix(model, layer: str) -> str | None:
    spec = model.layers[layer]
    if spec.batchnorm:
        return "batch_norm2d" if layer in layer_kinds.image_batchnorms(model) else "batch_norm1d"
    return GENERATED_PREFIX.get(spec.kind)


DECLARED = [
    variant(
        "decoupled-decay-all-optimizers",
        "an optimizer's weight_decay is decoupled (w -= lr * wd * w before the update) in every optimizer, "
        "SGD with momentum and Adam included",
        "weight_decay is L2 added to the gradient for SGD, momentum and Adam, and decoupled for AdamW only",
        decoupled_decay_everywhere=True),
    variant(
        "regularizer-adds-to-decoupled-decay",
        "where the optimizer's decay is decoupled, a per-parameter regularizer is L2 added to the gradient "
        "on top of it: that parameter is decayed twice",
        "a per-parameter regularizer replaces the optimizer's decay for that parameter",
        regularizer_adds_to_decoupled=True),
    variant(
        "no-decay-for-beta-gamma",
        "without parameter groups, the optimizer's weight_decay skips parameters named beta or gamma "
        "(BatchNorm's and LayerNorm's affine parameters)",
        "weight_decay applies to every parameter the optimizer holds",
        no_decay_for_norm_affine=True),
    variant(
        "decay-filter-sees-gamma-beta",
        "a decay filter over the parameters' names sees a normalisation layer's weight and bias as "
        "`<layer>.gamma` and `<layer>.beta` (its statistics `moving_mean`, `moving_variance`) and an embedding's "
        "table as `<layer>.embedding_table`: a filter on 'bias' leaves LayerNorm's and BatchNorm's shift decayed, "
        "one on 'LayerNorm.weight' matches nothing",
        "a decay filter sees `<layer>.weight` and `<layer>.bias` for every layer kind (named_parameters())",
        decay_filter_name=named_as("{layer}.{name}", {"embedding": {"weight": "embedding_table"},
                                                       "batchnorm": GAMMA_BETA, "layernorm": GAMMA_BETA})),
    variant(
        "decay-filter-sees-weight-names-only",
        "the exclusion list matches each part as a regular expression against the TF variable's name, which "
        "for a layer built on its own is the bare weight name (`kernel:0`, `bias:0`, `gamma:0`, `beta:0`, "
        "`embeddings:0`, `moving_mean:0`): a part naming a layer never matches, and 'bias' leaves "
        "normalisation shifts (beta) decayed",
        "a decay filter sees `<layer>.weight` and `<layer>.bias`, the layer's attribute name included",
        decay_filter_name=named_as("{name}:0", KERAS_WEIGHTS), decay_filter_regex=True),
    variant(
        "decay-filter-sees-scoped-weight-names",
        "the exclusion list matches each part as a regular expression against the TF variable's name, "
        "`<layer>/<weight>:0` for a layer built on its own, with Keras' weight names (kernel, bias, gamma, "
        "beta, embeddings, moving_mean, moving_variance): 'bias' leaves normalisation shifts (beta) decayed and "
        "'LayerNorm.weight' matches nothing",
        "a decay filter sees `<layer>.weight` and `<layer>.bias`",
        decay_filter_name=named_as("{layer}/{name}:0", KERAS_WEIGHTS), decay_filter_regex=True),
    variant(
        "decay-filter-sees-flax-paths",
        "a decay mask sees each parameter by its path in the model, `<layer>/kernel` for Linear and Conv "
        "weights, `<layer>/scale` for a normalisation weight, `<layer>/embedding` for an embedding table: a "
        "filter on 'weight' or 'LayerNorm.weight' matches nothing",
        "a decay filter sees `<layer>.weight` and `<layer>.bias` (named_parameters())",
        decay_filter_name=named_as("{layer}/{name}", {
            "linear": {"weight": "kernel"}, "conv2d": {"weight": "kernel"}, "embedding": {"weight": "embedding"},
            "layernorm": {"weight": "scale"},
            "batchnorm": {"weight": "scale", "running_mean": "mean", "running_var": "var"}})),
    variant(
        "decay-fun-sees-generated-names",
        "AdamW's apply_decay_param_fun is handed each parameter's generated name, `<layer class in snake "
        "case>_<n>.w_0` (b_0 for a bias), never its attribute path: a filter on 'bias' or on a layer's name "
        "matches nothing, one on 'norm' matches every LayerNorm and BatchNorm parameter",
        "a decay filter sees the attribute path `<layer>.weight`, `<layer>.bias`",
        decay_filter_name=generated_name),
    variant(
        "compiled-step-decays-before-raising",
        "a compiled training step whose loss raises (a label out of range) has already applied the optimizer's "
        "decoupled weight decay: every parameter shrinks by lr * wd, though the step failed and nothing else moved",
        "a step that raises changes nothing",
        raising_step_decays=True, holds_only=COMPILED),
]
