"""Which parameters the model's collection holds, and which mode each layer runs in."""
from __future__ import annotations

from . import COMPILED, variant

DECLARED = [
    variant(
        "frozen-still-trained",
        "marking a parameter not trainable only takes it out of the trainable collection (and so out of "
        "an optimizer built from it): handed to the gradient call and the optimizer explicitly, it gets "
        "its gradient and is updated and decayed",
        "a frozen parameter receives no gradient, so no optimizer moves it",
        frozen_grad_in_optimizer=True, collection_skips_frozen=True),
    variant(
        "default-collection-skips-frozen",
        "the model's default parameter collection leaves out the parameters frozen when it is taken: an "
        "optimizer built from it never holds them, so a parameter unfrozen later gets no update",
        "an optimizer built from the model's default collection holds its frozen parameters too: "
        "unfreezing one later trains it",
        collection_skips_frozen=True),
    variant(
        "trainable-collection-read-each-step",
        "the training loop hands the optimizer the model's trainable collection as it is at each step: a "
        "parameter frozen between steps drops out of the update (no decay, no momentum), one unfrozen joins it",
        "an optimizer built from the model's default collection keeps the parameters it was built with",
        collection_skips_frozen=True, collection_read_each_step=True),
    variant(
        "plain-containers-unregistered",
        "layers kept in a plain list, dict or tuple are not registered: the model's parameter collection "
        "misses them, so an optimizer built from it never updates them",
        "every layer the model holds is registered, whatever container holds it",
        plain_containers_registered=False),
    variant(
        "plain-contained-layers-stay-train",
        "train()/eval() reach registered layers only: a layer in a plain container stays in train mode "
        "(its construction default), so its BatchNorm keeps normalising with batch statistics in eval",
        "train/eval mode reaches every layer the model holds",
        plain_contained_mode="train"),
    variant(
        "plain-contained-layers-stay-eval",
        "the train-mode switch reaches registered layers only and layers start in inference mode: a "
        "BatchNorm in a plain container never trains its statistics and always normalises with them",
        "train/eval mode reaches every layer the model holds",
        plain_contained_mode="eval"),
    variant(
        "compiled-grad-keeps-first-mode",
        "a compiled gradient function (one graph per step path, compiled at its first call) keeps the "
        "train/eval mode the model had then: a later switch of the model's mode does not reach it, so its "
        "BatchNorm layers keep normalising and updating statistics as they did at that first call",
        "each backward runs every layer in the mode the model is in at that step",
        compiled_grad_keeps_first_mode=True, holds_only=COMPILED),
    variant(
        "compiled-keeps-first-frozen",
        "a compiled step keeps the frozen parameters of its first call: one unfrozen later still gets no "
        "gradient from that step's program, and does not train",
        "a compiled step follows the parameters' current trainable flags",
        compiled_keeps_first_frozen=True, holds_only=COMPILED),
    variant(
        "step-skips-frozen",
        "the optimizer step skips frozen parameters, even one that holds a gradient",
        "the optimizer step updates every parameter it holds that has a gradient, frozen or not",
        step_skips_frozen=True),
]
