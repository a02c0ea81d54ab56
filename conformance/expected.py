"""A room's expected.yaml: the outcomes of its runs that are neither conform nor documented, each with
why (entries scoped like known.yaml's: versions, devices, modes, apis, backends). The engine holds
each run to them (engine/contract.py); the docs list them (report/docs.py)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .oracle.known import RUNNERS_DIR, Scoped, check_backends
from .spec.safe_yaml import load_yaml, validate

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
        from .oracle.variants import VARIANTS
        unknown = [n for n in names if n not in VARIANTS]
        if unknown:
            raise ValueError(f"unknown variant {unknown[0]!r}")
        return names

    def lists(self, case_id: str, base_id: str) -> bool:
        return any(case_pattern(p).fullmatch(case_id) or case_pattern(p).fullmatch(base_id) for p in self.cases)

    def label(self) -> str:
        return f"expected.yaml:{self._line} ({self.outcome}: {self.why})"

    _line: int = 0


def case_pattern(text: str) -> re.Pattern:
    """An entry's case pattern as a regular expression: * matches any characters."""
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
