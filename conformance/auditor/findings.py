"""From observations to findings: framework-neutral rules, one per kind (kinds.py), each reading only
the inventory and the steps a probe observed. The variant that explains a finding, and what the same
code does in the other frameworks, come from the rooms' profiles (known.yaml), never from here."""
from __future__ import annotations

import functools
import re
from typing import Optional

from pydantic import BaseModel, ConfigDict

from ..oracle.known import KnownVariant, load_known, profile
from ..oracle.variants import VARIANTS
from ..run import Run
from ..runners import ROOMS
from .kinds import KINDS
from .observe import Inventory, StepObservation


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str
    subject: str                 # the parameter's name or the layer's path
    layer_type: str = ""
    steps: list[int] = []        # the audited steps it showed in (empty: read without running)
    numbers: dict[str, float] = {}
    detail: str
    variant: Optional[str] = None  # the profile's variant that produces it, for the installed version
    link: Optional[str] = None     # the upstream page that states that variant
    porting: dict[str, str] = {}   # another framework -> what the same code does there


def _merge(found: dict, kind: str, subject: str, layer_type: str, step: Optional[int], detail: str,
           **numbers: float) -> None:
    """One finding per kind and subject: the steps add up, each number keeps its largest value."""
    key = (kind, subject)
    if key not in found:
        found[key] = Finding(kind=kind, subject=subject, layer_type=layer_type, detail=detail)
    finding = found[key]
    if step is not None and step not in finding.steps:
        finding.steps.append(step)
    for name, value in numbers.items():
        finding.numbers[name] = max(value, finding.numbers.get(name, value))


def _inside(path: str, others: set[str]) -> bool:
    """Whether `path` lies inside another of `others` (a.b inside a, a[0].c inside a[0] and a)."""
    return any(path != other and (path.startswith(other + ".") or path.startswith(other + "["))
               for other in others)


def analyse(inventory: Inventory, steps: list[StepObservation]) -> tuple[list[Finding], list[str]]:
    """(findings, notes) from what was observed so far; findings most severe kind first."""
    found: dict = {}
    params = {p.name: p for p in inventory.params}

    unregistered_layers = {layer.path for layer in inventory.layers if not layer.registered}
    for layer in inventory.layers:
        if not layer.registered and not _inside(layer.path, unregistered_layers):
            held = [p for p in inventory.params if not p.registered and not p.statistic and
                    (p.layer == layer.path or _inside(p.layer, {layer.path}))]
            in_optimizer = sum(p.in_optimizer for p in held)
            _merge(found, "unregistered", layer.path, layer.type, None,
                   f"{len(held)} parameters, {in_optimizer or 'none'} of them held by the optimizer",
                   elements=sum(p.size for p in held))
    for p in inventory.params:
        if not p.registered and not (p.layer in unregistered_layers or _inside(p.layer, unregistered_layers)):
            _merge(found, "unregistered", p.name, p.layer_type, None,
                   "parameter in a plain container" + (", held by the optimizer" if p.in_optimizer else
                                                      ", not held by the optimizer"), elements=p.size)
        if p.registered and p.trainable and not p.statistic and not p.in_optimizer:
            _merge(found, "not-in-optimizer", p.name, p.layer_type, None,
                   "trainable, registered, and not held by the optimizer", elements=p.size)
        if p.statistic and p.in_optimizer:
            _merge(found, "statistics-in-optimizer", p.name, p.layer_type, None,
                   "running statistic held by the optimizer" +
                   (", with weight decay set for it" if p.decayed else ""), elements=p.size)

    for setting in inventory.decay_settings:
        if not setting.excludes or setting.unmatched:
            what = "exempts no parameter of this model" if not setting.excludes else \
                f"names {', '.join(map(repr, setting.unmatched[:5]))} exempt nothing"
            _merge(found, "decay-exclusion-ineffective", setting.setting, "", None, what,
                   exempted=len(setting.excludes))

    no_gradient = {n for n, p in params.items() if p.trainable and not p.statistic and p.in_optimizer}
    updated_steps = 0
    for obs in steps:
        if obs.updates:
            updated_steps += 1
        mismatched = set(obs.modes) if inventory.has_modes and obs.model_training is not None else set()
        for path in sorted(mismatched):
            if not _inside(path, mismatched):
                mode = "train" if obs.modes[path] else "eval"
                model_mode = "train" if obs.model_training else "eval"
                _merge(found, "mode-mismatch", path, _layer_type(inventory, path), obs.step,
                       f"in {mode} mode while the model is in {model_mode} mode at the update")
        for name, seen in obs.params.items():
            p = params.get(name)
            if p is None:
                continue
            if obs.updates and (seen.grad not in ("none", "zero")):
                no_gradient.discard(name)
            if not seen.moved:
                continue
            numbers = {"change": seen.change, "grad_norm": seen.grad_norm or 0.0}
            if p.statistic:
                if obs.model_training is False:  # the step ran in eval, whatever mode its layer kept
                    _merge(found, "statistics-moved-in-eval", name, p.layer_type, obs.step,
                           "running statistic moved in a step run in eval mode", change=seen.change)
            elif not p.trainable:
                _merge(found, "frozen-but-moved", name, p.layer_type, obs.step,
                       f"frozen, moved with gradient {seen.grad} at the update", **numbers)
            elif seen.grad in ("none", "zero"):
                _merge(found, "moved-without-gradient", name, p.layer_type, obs.step,
                       f"gradient {'None' if seen.grad == 'none' else 'all zero'} at the update, yet moved"
                       + (" (decayed)" if p.decayed else ""), **numbers)
    if updated_steps:
        for name in sorted(no_gradient):
            _merge(found, "no-gradient", name, params[name].layer_type, None,
                   f"no gradient (None or all zero) at the update in each of {updated_steps} steps")

    notes = []
    held_at_zero = [n for n in sorted(no_gradient) if params[n].decayed is not False and all(
        obs.params[n].was_zero and not obs.params[n].moved for obs in steps if n in obs.params)]
    if held_at_zero:
        notes.append(f"{len(held_at_zero)} parameter(s) without gradient stayed exactly 0 "
                     f"({', '.join(held_at_zero[:3])}{', ...' if len(held_at_zero) > 3 else ''}): "
                     "decay cannot show on a value at 0, so the audit cannot tell whether the update "
                     "would move them once they are not")
    order = list(KINDS)
    return sorted(found.values(), key=lambda f: (order.index(f.kind), f.subject)), notes


def _layer_type(inventory: Inventory, path: str) -> str:
    return next((layer.type for layer in inventory.layers if layer.path == path), "")


def step_problem(steps: list[StepObservation]) -> Optional[str]:
    """Why the audited steps say nothing about training (None when they do): the optimizer handed
    over never updated, or nothing moved at all."""
    if steps and not any(obs.updates for obs in steps):
        return (f"the optimizer handed over never updated in {len(steps)} step(s): is it the one the step "
                "uses, and does the step update?")
    if steps and not any(seen.moved for obs in steps for seen in obs.params.values()):
        return f"no parameter and no statistic changed in {len(steps)} step(s): is `step` a training step?"
    return None


# ------------------------------------------------------------------ explanations from the profiles
def replica_findings(inventory: Inventory, digests: list[list[dict[str, str]]]) -> list[Finding]:
    """replicas-disagree: each parameter or statistic whose value differs between the replicas after a step.
    digests[rank][step]: {name: a digest of its value after that step}, for the steps every rank took."""
    params = {p.name: p for p in inventory.params}
    steps = min(len(per_rank) for per_rank in digests)
    found: dict = {}
    for step in range(steps):
        for name in digests[0][step]:
            if name in params and len({per_rank[step].get(name) for per_rank in digests}) > 1:
                kind = "replica-statistics-differ" if params[name].statistic else "replicas-disagree"
                _merge(found, kind, name, params[name].layer_type, step,
                       f"its value differs between the {len(digests)} replicas after the step")
    return list(found.values())


def explain(findings: list[Finding], framework: str, version: str, rooms=None, replicas: str = "1") -> None:
    """Fill each finding's variant (the first of its kind's that the framework's profile holds for
    this version, in eager loop runs of these replicas) and its porting notes (what each other room's profile
    holds)."""
    known = {fw: _known(fw) if rooms is None else load_known(fw, rooms) for fw in ROOMS}
    run = Run(framework, version=version, replicas=replicas)
    here = profile(known.get(framework, []), run) if framework in known else []
    for finding in findings:
        candidates = KINDS[finding.kind].variants
        chosen: Optional[KnownVariant] = next((v for name in candidates for v in here if v.variant == name), None)
        if chosen is not None:
            finding.variant, finding.link = chosen.variant, str(chosen.link) if chosen.link else None
        for other in ROOMS:
            if other == framework:
                continue
            finding.porting[other] = _porting_note(finding, candidates, known.get(other, []))


@functools.lru_cache(maxsize=None)
def _known(framework: str) -> list[KnownVariant]:
    """The room's known.yaml, read once per process (an audit's own cost counts)."""
    return load_known(framework)


def _porting_note(finding: Finding, candidates: tuple[str, ...], known: list[KnownVariant]) -> str:
    held = [v for name in candidates for v in known if v.variant == name]
    if held:
        return "; ".join(f"{v.variant} ({_scope(v)}): {VARIANTS[v.variant].behaviour}" for v in held)
    if finding.variant:
        return f"not {finding.variant}: {VARIANTS[finding.variant].reference}"
    if candidates:
        return "its profile holds none of " + ", ".join(candidates) + ": the reference semantics"
    return "the same code gives the same finding (the model's code causes it, not the framework)"


def _scope(variant: KnownVariant) -> str:
    parts = [variant.versions or "all versions"]
    # a backend bounds graph runs only (an eager run has none): it says nothing about the user's loop
    parts += [f"{k} {', '.join(v)}" for k, v in variant.scope().items() if k not in ("versions", "backends") and v]
    return re.sub(r"\s+", " ", "; ".join(parts))
