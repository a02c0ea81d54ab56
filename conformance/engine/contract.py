"""A room's contract with its runs: the outcomes that are neither conform nor documented are data,
in the room's expected.yaml, each with why; everything else must conform or be documented.

For each run (a results file) of a room, `check_run` lists every way the run breaks the contract:
- an outcome that is explained-but-undocumented, unsupported or an error and that no entry lists;
- an entry that does not hold (stale): a case it lists has another outcome, its reason or
  variants differ, or it lists no case of the spec;
- an undocumented divergence (the profile does not reproduce it), or a conform case the profile
  predicts to diverge;
- a variant of the run's profile that no divergence needed, unless an `unused` entry says why.
Entries are scoped like known.yaml's (versions, devices, modes, apis, backends).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..oracle.known import RUNNERS_DIR, Scoped, check_backends
from ..results import Results
from ..spec.safe_yaml import load_yaml, validate

OUTCOMES = ("explained", "unsupported", "error", "unused")


class ExpectedOutcome(Scoped):
    """Cases of some runs whose outcome is `outcome`, or (unused) profile variants no divergence needs."""
    outcome: Literal[OUTCOMES]
    # instance ids or base ids (a base id names all its instances); * matches any characters
    cases: list[str] = []
    # explained: exactly the variants the oracle needed; unused: the profile's variants no divergence needs
    variants: list[str] = []
    reason: str = ""  # unsupported / error: text the recorded reason holds
    why: str = Field(min_length=1)  # what the framework does here, in a sentence

    @model_validator(mode="after")
    def _shape(self):
        if self.outcome == "unused":
            if self.cases or not self.variants:
                raise ValueError("an 'unused' entry lists variants, not cases")
        elif not self.cases:
            raise ValueError(f"an {self.outcome!r} entry lists the cases it holds for")
        if self.reason and self.outcome not in ("unsupported", "error"):
            raise ValueError("'reason' belongs to an unsupported or error entry")
        return self

    @field_validator("variants")
    @classmethod
    def _known_names(cls, names):
        from ..oracle.variants import VARIANTS
        unknown = [n for n in names if n not in VARIANTS]
        if unknown:
            raise ValueError(f"unknown variant {unknown[0]!r}")
        return names

    def lists(self, case_id: str, base_id: str) -> bool:
        return any(_pattern(p).fullmatch(case_id) or _pattern(p).fullmatch(base_id) for p in self.cases)

    def label(self) -> str:
        return f"expected.yaml:{self._line} ({self.outcome}: {self.why})"

    _line: int = 0


def _pattern(text: str) -> re.Pattern:
    return re.compile(".*".join(re.escape(part) for part in text.split("*")))


class ExpectedFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    outcomes: list[ExpectedOutcome] = []


def load_expected(framework: str, rooms: Path = RUNNERS_DIR) -> list[ExpectedOutcome]:
    """The room's expected outcomes; an absent file means none (every run conforms or is documented)."""
    path = Path(rooms) / framework / "expected.yaml"
    if not path.exists():
        return []
    raw = load_yaml(path)
    entries = validate(ExpectedFile, raw if raw is not None else {}, path).outcomes
    check_backends(framework, entries, raw["outcomes"] if entries else [], path)
    for n, entry in enumerate(entries):
        entry._line = raw["outcomes"].item_lines[n]
    return entries


def check_run(doc: Results, expected: list[ExpectedOutcome], spec_ids: list[str],
              all_ids: list[str] | None = None) -> list[str]:
    """Every way this run breaks its room's contract, one line each; empty when it holds. `spec_ids`: the
    instances the run takes (run.takes); `all_ids`: the whole spec's, which an entry's pattern must name
    (default: spec_ids)."""
    run = doc.environment.run
    entries = [e for e in expected if e.holds_for(run)]
    problems = []
    if not doc.complete:
        problems.append("the run is incomplete (interrupted): run it again")
    ids = [c.id for c in doc.cases]
    if missing := [i for i in spec_ids if i not in set(ids)]:
        problems.append(f"{len(missing)} cases of the spec are not in the run, e.g. {missing[0]}")
    every = spec_ids if all_ids is None else all_ids
    bases = {i.split("[")[0] for i in every}
    for entry in entries:
        for pattern in entry.cases:
            if not any(_pattern(pattern).fullmatch(i) for i in [*every, *bases]):
                problems.append(f"{entry.label()}: {pattern!r} names no case of the spec")
    for case in doc.cases:
        listing = [e for e in entries if e.outcome != "unused" and e.lists(case.id, case.base_id)]
        outcome = case.outcome
        if outcome == "divergence":
            problems.append(f"{case.id}: undocumented divergence ({case.unexplained}): confirm it with a snippet "
                            f"and add the variant to known.yaml, or report it")
        elif outcome == "conform" and case.unexplained:
            problems.append(f"{case.id}: conform, but the profile predicts a divergence ({case.unexplained})")
        if case.verdict in ("conform", "divergence") and not case.checks:
            problems.append(f"{case.id}: {case.verdict} with no check recorded")
        if outcome in ("conform", "documented", "divergence"):
            problems += [f"{e.label()}: {case.id} is {outcome} (stale entry)" for e in listing]
            continue
        if not listing:
            problems.append(f"{case.id}: {outcome} ({case.reason if outcome != 'explained' else ', '.join(case.variants)}) "
                            f"is not listed in expected.yaml")
        for entry in listing:
            if entry.outcome != outcome:
                problems.append(f"{entry.label()}: {case.id} is {outcome}" + (f" ({case.reason})" if case.reason else ""))
            elif entry.reason and entry.reason not in (case.reason or ""):
                problems.append(f"{entry.label()}: {case.id}'s reason is {case.reason!r}")
            elif entry.variants and sorted(entry.variants) != sorted(case.variants):
                problems.append(f"{entry.label()}: {case.id} needed {', '.join(case.variants) or 'no variant'}")
    used = {name for case in doc.cases for name in case.variants}
    listed_unused = {name for e in entries if e.outcome == "unused" for name in e.variants}
    # a data-parallel run takes only the data-parallel cases: it answers for the variants scoped to its replicas,
    # and the single-process runs for the rest
    answerable = [v for v in doc.profile if run.replicas == "1" or run.replicas in v.replicas]
    for variant in answerable:
        if variant.name not in used and variant.name not in listed_unused:
            problems.append(f"known.yaml: {variant.name} is in force for this run but no divergence needed it "
                            f"(scope it, or list it as unused in expected.yaml with why)")
    for e in entries:
        if e.outcome == "unused":
            problems += [f"{e.label()}: {name} was needed (stale entry)" for name in e.variants if name in used]
            problems += [f"{e.label()}: {name} is not in this run's profile" for name in e.variants
                         if name not in {v.name for v in doc.profile}]
    return problems
