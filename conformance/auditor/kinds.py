"""The kinds of finding an audit reports, most severe first.

Each kind names the variants (oracle/variants/) whose mechanism produces it. A finding on a
framework is explained by the one of them that the framework's profile (its room's known.yaml) holds
for the installed version; where none does, the reference semantics produce it too (the user's
code, not the framework, is the cause), and the finding says so.
"""
from __future__ import annotations

from typing import NamedTuple


class Kind(NamedTuple):
    title: str               # one line, for the table's group header
    variants: tuple[str, ...]  # mechanisms that produce it, in the order they are tried


KINDS: dict[str, Kind] = {
    "unregistered": Kind(
        "layer or parameter held in a plain Python container, not registered with the model: its "
        "parameter collection, optimizer, train/eval switch and checkpoints miss it",
        ("plain-containers-unregistered",)),
    "not-in-optimizer": Kind(
        "trainable registered parameter that the optimizer does not hold: it never trains",
        ("default-collection-skips-frozen", "trainable-collection-read-each-step")),
    "frozen-but-moved": Kind(
        "parameter frozen the framework's way that moved in a step",
        ("frozen-still-trained", "functional-zero-filled-grads", "clear-default-zero-fills")),
    "moved-without-gradient": Kind(
        "parameter whose gradient at the update was None or all zero, yet it moved in that step "
        "(weight decay, momentum or Adam state)",
        ("clear-default-zero-fills", "functional-zero-filled-grads", "zeros-clear-fills-never-used")),
    "replicas-disagree": Kind(
        "parameter whose value differs between the data-parallel replicas after a step: its gradients were not "
        "combined (a parameter the forward left unused), so the replicas train apart",
        ("unused-params-refused",)),
    "replica-statistics-differ": Kind(
        "running statistic whose value differs between the data-parallel replicas after a step: each replica "
        "updates it with its own rows, and a checkpoint keeps one replica's",
        ("replica-stats-own-rows",)),
    "statistics-in-optimizer": Kind(
        "running statistics held by the optimizer (a regularizer may decay them)",
        ("bn-stats-in-parameters",)),
    "statistics-moved-in-eval": Kind(
        "running statistics that moved in a step run in eval mode",
        ("plain-contained-layers-stay-train", "compiled-grad-keeps-first-mode", "bn-stats-differentiated")),
    "mode-mismatch": Kind(
        "layer whose train/eval mode differs from the model's at the update",
        ("plain-contained-layers-stay-train", "plain-contained-layers-stay-eval")),
    "no-gradient": Kind(
        "trainable parameter the optimizer holds that got no gradient (None or all zero) in any "
        "audited step: an unused branch or norm layer, or a detach before it",
        ()),
    "decay-exclusion-ineffective": Kind(
        "the optimizer's decay-exclusion setting excludes nothing, or not what its names say",
        ("no-decay-for-beta-gamma",)),
}
