"""The points at which a framework's training semantics may differ from the reference, each with the reference's
value: the oracle (reference.py) reads a `Semantics` instead of asking which variant is in force, and a variant
(variants/) is a declaration of the points it changes. `Semantics()` is the reference itself.

A point is a switch, a choice among named behaviours, a table that a variant extends (settings left to default,
default initializations) or a function (what a weight-decay name filter sees, how data-parallel replicas weigh
their gradients).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Mapping


@dataclass(frozen=True)
class Semantics:
    # ---- gradients
    default_clear: str = "none"                 # what the default clearing call does: set to None, or "zeros"
    zeros_clear_reaches_never_used: bool = False  # clearing to zeros also gives a never-used parameter zeros
    every_optimizer_param_gets_grad: bool = False  # backward returns zeros where no gradient flows, and none
    #                                                 for parameters outside the optimizer
    nonscalar_backward_sums: bool = False       # backward of a per-sample loss differentiates its sum
    compiled_first_call_sets_grads: bool = False  # a compiled path's first call sets gradients, not adds
    clear_skips_frozen: bool = False            # clearing leaves a frozen parameter's gradient
    # ---- collections, freezing and modes
    frozen_grad_in_optimizer: bool = False      # a frozen parameter handed to the optimizer still gets its gradient
    collection_skips_frozen: bool = False       # the default collection leaves out what is frozen when it is taken
    collection_read_each_step: bool = False     # ... and is taken again at every freeze or unfreeze
    collection_holds_statistics: bool = False   # BatchNorm running statistics are in the parameter collection
    plain_containers_registered: bool = True    # layers in plain lists, dicts and tuples are registered
    plain_contained_mode: str = ""              # "train" / "eval": the mode a plain-contained layer stays in
    compiled_grad_keeps_first_mode: bool = False  # a compiled path keeps the train/eval mode of its first call
    compiled_keeps_first_frozen: bool = False   # a compiled path keeps the frozen parameters of its first call
    step_skips_frozen: bool = False             # the optimizer step skips frozen parameters holding a gradient
    frozen_bn_inference: bool = False           # a BatchNorm frozen with the layer switch runs in inference mode
    frozen_layernorm_grad_ignores_weight: bool = False  # a frozen LayerNorm weight passes dy on as if it were 1
    # ---- BatchNorm
    statistics_differentiated: bool = False     # running statistics the optimizer holds get the eval-step gradient
    bn_one_value: str = "raise"                 # one value per channel in train mode: "raise", "skip", "normalise"
    running_var_biased: bool = False            # the running variance takes the biased (1/n) batch variance
    # ---- Embedding
    padding_row_looks_up_zeros: bool = False    # looking up the padding index gives zeros, whatever the row holds
    padding_row_gets_gradient: bool = False     # the padding row gets its gradient like any row
    # ---- weight decay
    decoupled_decay_everywhere: bool = False    # weight_decay is decoupled in every optimizer, not AdamW's only
    regularizer_adds_to_decoupled: bool = False  # a per-parameter regularizer adds L2 on top of decoupled decay
    no_decay_for_norm_affine: bool = False      # without parameter groups, norm layers' weight and bias skip decay
    # what a decay filter over names sees for (model, optimizer, layer, role): None is torch's `layer.role`
    decay_filter_name: Callable | None = None
    decay_filter_regex: bool = False            # a filter's parts match as regular expressions, not substrings
    raising_step_decays: bool = False           # a compiled step whose loss raises has applied decoupled decay
    # ---- optimizers
    momentum_velocity_scaled_by_lr: bool = False  # the momentum buffer holds lr-scaled steps
    adam_epsilon_hat: bool = False              # Adam adds epsilon to sqrt(v) before the bias correction
    adamw_bias_correction: bool = True          # AdamW corrects the moments' bias
    adam_squares_each_lookup: bool = False      # a sparse embedding gradient squares each lookup's slice
    adam_shared_step_counter: bool = False      # Adam's bias correction counts the optimizer's steps
    # ---- settings left to default, and default initialization (tables a variant extends)
    defaults: Mapping = field(default_factory=dict)  # (optimizer or layer kind, field) -> value
    init: Mapping = field(default_factory=dict)      # (layer kind, role) -> (family, scale(fan_in, fan_out))
    dropout_positional_keeps: bool = False      # Dropout's first positional argument is the keep probability
    # ---- cross-entropy
    ce_smoothing_drops_ignore_index: bool = False   # with label smoothing no label is ignored
    ce_negative_ignore_mean_over_batch: bool = False  # a negative ignore index: the mean divides by the batch
    ce_smoothing_mean_over_classes: bool = False    # smoothing and an ignore index: the mean divides by n * classes
    ce_all_ignored_loss_zero: bool = False      # an all-ignored batch's mean is 0
    ce_all_ignored_grad_nan: bool = False       # ... and its gradient NaN
    # ---- data parallelism
    replica_weight: Callable | None = None      # (rows, global batch, replicas) -> a replica's mean-loss gradient's
    #                                             weight; None: one device on the global batch
    replica_stats_own_rows: bool = False        # each replica normalises with its own rows' statistics
    replica_clip_before_combining: bool = False  # clipping applies to each replica's share before the sum
    replica_stats_read_averaged: bool = False   # reading running statistics gives the replicas' mean
    unused_params_refused: bool = False         # a step after one that left a parameter without gradient raises
    sync_zero_fills_unreached: bool = False     # a synchronised backward gives each unreached trainable one zeros
    replica_grads_packed: bool = False          # replicas reduce the gradients they hold packed, added by position
    ndim_filter_sees_flat: bool = False         # a filter on p.ndim sees every parameter as 1-D
    clip_norm_per_shard: bool = False           # global-norm clipping: each replica clips its piece of the flat
    #                                             gradient by that piece's own norm


POINTS = {f.name for f in dataclasses.fields(Semantics)}
TABLES = {"defaults", "init"}  # points whose value a variant extends rather than replaces


def merged(changes: list[tuple[str, Mapping]]) -> Semantics:
    """The reference with each (variant, its changes) applied. Two variants that set one point (or one table entry)
    to different values contradict each other: ValueError naming both."""
    values: dict[str, object] = {}
    setter: dict[tuple, str] = {}
    for name, points in changes:
        for point, value in points.items():
            entries = value.items() if point in TABLES else [(None, value)]
            for key, item in entries:
                where = (point, key)
                if where in setter and _value(values, point, key) != item:
                    raise ValueError(f"variants {setter[where]} and {name} set {point}"
                                     f"{'' if key is None else f' {key}'} differently")
                setter[where] = name
                if point in TABLES:
                    values.setdefault(point, {})[key] = item
                else:
                    values[point] = item
    return Semantics(**values)


def _value(values: dict, point: str, key):
    return values[point] if key is None else values[point][key]


REFERENCE = Semantics()


class Consulted:
    """A Semantics that notes the name of each point read through it (`read`). A run of the oracle that read none of
    a variant's points takes the same path, to the same observation, with that variant or without it."""

    def __init__(self, semantics: Semantics):
        self._semantics = semantics
        self.read: set[str] = set()

    def __getattr__(self, point):  # only for names not set in __init__: the points
        if point.startswith("_"):  # copy and pickle look for their hooks before __init__ has run
            raise AttributeError(point)
        value = getattr(self._semantics, point)
        self.read.add(point)
        setattr(self, point, value)  # later reads find it here, at a plain attribute's cost
        return value
