"""Constructor defaults: the value a framework takes for a setting a case leaves to it (the reference's are
torch's, oracle.reference.REFERENCE_DEFAULTS)."""
from __future__ import annotations

from . import variant

DECLARED = [
    variant(
        "bn-default-momentum-0.99",
        "a BatchNorm built without momentum keeps 0.99 of its running statistics per batch (the new "
        "batch weighs 0.01)",
        "a default BatchNorm weighs the new batch 0.1 (torch momentum=0.1, 0.9 in the old-statistic convention)",
        defaults={("batchnorm", "momentum"): 0.01}),
    variant(
        "norm-default-eps-1e-3",
        "BatchNorm and LayerNorm built without epsilon add 1e-3 to the variance",
        "the default epsilon of BatchNorm and LayerNorm is 1e-5",
        defaults={("batchnorm", "eps"): 1e-3, ("layernorm", "eps"): 1e-3}),
    variant(
        "layernorm-default-eps-1e-7",
        "a LayerNorm built without epsilon adds 1e-7 to the variance",
        "the default epsilon of LayerNorm is 1e-5",
        defaults={("layernorm", "eps"): 1e-7}),
    variant(
        "layernorm-default-eps-1e-6",
        "a LayerNorm built without epsilon adds 1e-6 to the variance",
        "the default epsilon of LayerNorm is 1e-5",
        defaults={("layernorm", "eps"): 1e-6}),
    variant(
        "sgd-default-lr-0.01",
        "SGD (with or without momentum) built without a learning rate uses 0.01",
        "the default learning rate of SGD is 1e-3",
        defaults={("sgd", "lr"): 0.01, ("momentum", "lr"): 0.01}),
    variant(
        "sgd-default-lr-0.1",
        "SGD built without a learning rate steps with 0.1",
        "the default learning rate of every optimizer is 1e-3",
        defaults={("sgd", "lr"): 0.1}),
    variant(
        "momentum-default-0.9",
        "a momentum optimizer built without momentum uses 0.9",
        "a momentum optimizer built without momentum uses 0 (torch SGD's default: plain SGD)",
        defaults={("momentum", "momentum"): 0.9}),
    variant(
        "adam-default-eps-1e-7",
        "Adam and AdamW built without epsilon use 1e-7",
        "the default epsilon of Adam and AdamW is 1e-8",
        defaults={("adam", "eps"): 1e-7, ("adamw", "eps"): 1e-7}),
    variant(
        "adamw-default-eps-1e-6",
        "AdamW built without epsilon uses 1e-6",
        "the default epsilon of Adam and AdamW is 1e-8",
        defaults={("adamw", "eps"): 1e-6}),
    variant(
        "adamw-default-decay-0",
        "AdamW built without weight_decay does not decay",
        "AdamW's default weight_decay is 0.01",
        defaults={("adamw", "weight_decay"): 0.0}),
    variant(
        "adamw-default-decay-0.004",
        "AdamW built without weight_decay decays by 0.004 (lr-scaled, as its explicit decay)",
        "AdamW's default weight_decay is 0.01",
        defaults={("adamw", "weight_decay"): 0.004}),
    variant(
        "adamw-default-decay-0.0001",
        "AdamW built without weight_decay decays by 1e-4 (lr-scaled, as its explicit decay)",
        "AdamW's default weight_decay is 0.01",
        defaults={("adamw", "weight_decay"): 1e-4}),
    variant(
        "conv-default-no-bias",
        "a Conv2d built without saying whether it has a bias has none: ported code that leaves the argument out "
        "loses the bias (a checkpoint's bias has nowhere to go)",
        "a Conv2d has a bias unless it is built with bias=False",
        defaults={("conv2d", "bias"): False}),
    variant(
        "conv-default-pads-same",
        "a Conv2d built without a padding pads 'same' (kernel // 2 per side at stride 1): the image keeps its size, "
        "where ported code expects it to shrink by the kernel less one, so the layers after it see other shapes",
        "a Conv2d built without a padding pads nothing (padding=0, 'valid'): the image shrinks by the kernel less one",
        defaults={("conv2d", "padding"): "same"}),
    variant(
        "dropout-positional-is-keep-prob",
        "Dropout's first positional argument is the probability to keep: Dropout(0.1), ported as written, "
        "zeroes 90 % of the activations",
        "Dropout's first positional argument is the probability to zero: Dropout(0.1) zeroes 10 %",
        dropout_positional_keeps=True),
]
