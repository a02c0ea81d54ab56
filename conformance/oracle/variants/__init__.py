"""The closed vocabulary of semantic variants: documented behaviour that differs from the reference.

A variant is one declaration, in the module of its topic: what a framework with it does, what the reference
does instead, and the points of the oracle's semantics it changes (oracle/semantics.py). The oracle executes
it through those points alone, so a variant that changes existing points (a default, an initialization, the
names a decay filter sees, how replicas combine) is its declaration, its rooms' known.yaml entries and their
snippets; a new mechanism adds a point to Semantics and reads it in the oracle.

A framework's known file (runners/<framework>/known.yaml) lists the variants in force for a version range; a
divergence is documented only when the oracle, run with them, reproduces every checked observation of the
framework. The two sentences of each are shown in the report's profile table and porting notes, so they are
written for a porting engineer.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ...run import AXES
from ..semantics import POINTS, Semantics, merged


@dataclass(frozen=True)
class Variant:
    name: str
    behaviour: str   # what a framework with this variant does
    reference: str   # what the reference semantics (and a framework without it) do instead
    changes: Mapping[str, object]  # Semantics point -> its value under this variant
    # its scope rule: the runs it can hold in at all, as known.yaml scope keys and their values (a compiled
    # program's behaviour holds in graph mode only); every known.yaml entry of it must scope itself within them
    holds_only: Mapping[str, tuple] = field(default_factory=dict)


def variant(name: str, behaviour: str, reference: str, holds_only=None, **changes) -> Variant:
    unknown = sorted(set(changes) - POINTS)
    if unknown or not changes:
        raise ValueError(f"variant {name!r} must change points of Semantics; {unknown or 'none'} given")
    scopes = {axis.scope: axis.values for axis in AXES if axis.scope and axis.values}
    for key, values in (holds_only or {}).items():
        if key not in scopes or not set(values) <= set(scopes[key]):
            raise ValueError(f"variant {name!r}: holds_only {key}: {values} is not a scope of the run axes")
    return Variant(name, behaviour, reference, changes, dict(holds_only or {}))


# runs a variant can be in force in only (Variant.holds_only)
COMPILED = {"modes": ("graph",)}
DATA_PARALLEL = {"replicas": ("2",)}


# the topics, in the order the report and docs list variants
TOPICS = ("gradients", "collections", "layers", "decay", "optimizers", "defaults", "init", "losses", "replicas")
VARIANTS: dict[str, Variant] = {v.name: v for topic in TOPICS
                                for v in importlib.import_module(f"{__name__}.{topic}").DECLARED}


def semantics(names: Iterable[str]) -> Semantics:
    """The semantics of a framework with these variants in force; ValueError for an unknown name, or for two that
    set one point differently."""
    names = sorted(set(names))
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variants: {', '.join(unknown)}")
    return merged([(n, VARIANTS[n].changes) for n in names])
