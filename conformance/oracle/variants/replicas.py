"""Data parallelism: how a framework's engine combines its replicas (the reference is one device on the
global batch with the mean loss)."""
from __future__ import annotations

from . import DATA_PARALLEL, variant

DECLARED = [
    variant(
        "replica-grads-summed",
        "data-parallel replicas' gradients are summed: each update is the replica count times the single-device "
        "one on the global batch (each replica normalises with its own rows' BatchNorm statistics)",
        "data-parallel training equals one device on the global batch with the mean loss",
        replica_weight=lambda rows, total, replicas: 1.0, holds_only=DATA_PARALLEL),
    variant(
        "replica-grads-averaged",
        "data-parallel replicas' gradients are averaged over the replicas, each the gradient of its own rows' mean: "
        "with unequal shares the samples of a smaller share weigh more (each replica normalises with its own rows' "
        "BatchNorm statistics)",
        "data-parallel training equals one device on the global batch with the mean loss: every sample weighs the same",
        replica_weight=lambda rows, total, replicas: 1.0 / replicas, holds_only=DATA_PARALLEL),
    variant(
        "replica-stats-own-rows",
        "each data-parallel replica normalises its rows with their own BatchNorm statistics and updates its own "
        "running statistics (a read gives replica 0's), while the replicas' gradients combine as one device's on "
        "the global batch would",
        "BatchNorm normalises the global batch with its statistics, as on one device",
        replica_stats_own_rows=True, holds_only=DATA_PARALLEL),
    variant(
        "replica-clip-before-combining",
        "gradient clipping (global norm or per variable) applies to each data-parallel replica's share of the "
        "combined gradient (its own gradient as the combination weighs it), before the shares are added: a global "
        "norm is never measured on the combined gradient",
        "clipping applies to the combined gradient, as on one device",
        replica_clip_before_combining=True, holds_only=DATA_PARALLEL),
    variant(
        "replica-stats-read-averaged",
        "each data-parallel replica keeps its own BatchNorm running statistics, and reading them gives their mean "
        "over the replicas (a sync-on-read variable)",
        "running statistics are those of one device on the global batch",
        replica_stats_read_averaged=True, holds_only=DATA_PARALLEL),
    variant(
        "unused-params-refused",
        "a data-parallel step after one in which a trainable parameter got no gradient raises, unless the engine "
        "was told that parameters may go unused (find_unused_parameters=True); every later step raises too",
        "a parameter that gets no gradient on a data-parallel step is left alone, as on one device",
        unused_params_refused=True, holds_only=DATA_PARALLEL),
    variant(
        "sharded-unused-grads-zero",
        "a synchronised data-parallel backward gives every trainable parameter that no gradient reached a zero "
        "gradient (each is a view of one flat gradient, which the engine fills whole): weight decay, momentum and "
        "Adam's state move a layer the forward never used",
        "a parameter that no gradient reaches has none, and the optimizer skips it",
        sync_zero_fills_unreached=True, holds_only=DATA_PARALLEL),
    variant(
        "replica-grads-packed-by-position",
        "each data-parallel replica reduces only the gradients it holds, packed one parameter after another, and "
        "the packs are added by position: where replicas used different parameters, a parameter's shard receives "
        "whatever the other replicas packed at its place (another parameter's gradient), and a replica's shard of a "
        "parameter it did not use gets no gradient and is not updated",
        "each parameter's gradient combines the replicas' own gradients of that parameter; one a replica did not use "
        "adds nothing from that replica",
        replica_grads_packed=True, holds_only=DATA_PARALLEL),
    variant(
        "ndim-filter-sees-flat",
        "a sharded model's parameters are flat views of one flat parameter: a weight-decay filter on their number "
        "of dimensions (p.ndim < 2, meant to spare biases and norm scales) sees every parameter as 1-D and "
        "excludes them all from decay",
        "the filter sees each parameter's own shape: a weight matrix is 2-D and keeps its decay",
        ndim_filter_sees_flat=True, holds_only=DATA_PARALLEL),
    variant(
        "clip-norm-per-shard",
        "global-norm clipping of a sharded model clips each replica's shard of the gradient by that shard's own "
        "norm (the model's parameters flattened into one vector and cut into one equal piece per replica): each "
        "piece gets another factor, and a global norm is never measured",
        "clipping measures the norm of the whole combined gradient and scales it by one factor, as on one device",
        clip_norm_per_shard=True, holds_only=DATA_PARALLEL),
]
