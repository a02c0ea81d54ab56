"""A framework's semantic profile: the variants its room's known.yaml lists, and those in force for a run.

Each entry names a variant of the closed vocabulary (variants/), the framework versions and run
axes it holds for, why, and the upstream page that states it. Its evidence is the room's standalone
snippet `confirm/<variant>.py` (the variant's name with every other character than a-z, 0-9 and _
turned into _), which must exist.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, PrivateAttr, create_model, field_validator, model_validator

from ..run import AXES, Run, scoped
from ..spec.safe_yaml import SpecError, load_yaml, validate

RUNNERS_DIR = Path(__file__).parent.parent / "runners"
REPOSITORY = RUNNERS_DIR.parent.parent  # snippet paths are shown relative to it


def snippet_path(framework: str, variant: str) -> str:
    """Where the snippet confirming `variant` on `framework` lives in the suite's checkout."""
    return f"conformance/runners/{framework}/confirm/{re.sub(r'[^a-z0-9_]', '_', variant)}.py"


def _scope_fields() -> dict:
    """One optional field per scopable axis of run.AXES: `versions` a PEP 440 specifier, the others lists."""
    fields = {}
    for axis in AXES:
        if axis.scope == "versions":
            fields[axis.scope] = (str, "")
        elif axis.scope:
            fields[axis.scope] = (list[str], [])
    return fields


class Scoped(create_model("ScopeFields", __config__=ConfigDict(extra="forbid"), **_scope_fields())):
    """An entry that holds for some runs only: by version range and by the values of run axes (empty: all)."""

    @field_validator("versions", check_fields=False)
    @classmethod
    def _specifier(cls, versions):
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        try:
            SpecifierSet(versions)
        except (InvalidSpecifier, ValueError):  # ValueError: an integer part too long to convert
            raise ValueError(f"invalid version specifier {versions[:40]!r}") from None
        return versions

    @model_validator(mode="after")
    def _known_values(self):
        for axis in AXES:
            if axis.scope and axis.values and axis.scope != "versions":
                unknown = [v for v in getattr(self, axis.scope) if v not in axis.values]
                if unknown:
                    raise ValueError(f"{axis.scope}: {unknown[0]!r} is not a {axis.name} ({', '.join(axis.values)})")
        return self

    def scope(self) -> dict:
        return {axis.scope: getattr(self, axis.scope) for axis in AXES if axis.scope}

    def holds_for(self, run: Run) -> bool:
        return scoped(self.scope(), run)


class KnownVariant(Scoped):
    """One semantic variant in force for a framework."""
    variant: str
    reason: str
    # the upstream page that states it; null for a behaviour the suite found and no page states
    # (its divergences are then "explained, undocumented")
    link: Optional[HttpUrl]
    _snippet: str = PrivateAttr("")  # set by load_known: the confirming script, relative to the repository

    @property
    def snippet(self) -> str:
        return self._snippet

    @field_validator("variant")
    @classmethod
    def _known_name(cls, name):
        from .variants import VARIANTS
        if name not in VARIANTS:
            raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
        return name

    @model_validator(mode="after")
    def _within_its_rule(self):
        """An entry scopes itself within the runs its variant can hold in at all (its declaration's holds_only)."""
        from .variants import VARIANTS
        for key, values in VARIANTS[self.variant].holds_only.items():
            mine = getattr(self, key)
            if not mine or not set(mine) <= set(values):
                raise ValueError(f"{self.variant} holds only in runs with {key}: {list(values)}; scope the entry so")
        return self


class KnownFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    variants: list[KnownVariant] = Field(default_factory=list)

    @model_validator(mode="after")
    def _once_each(self):
        """A variant is listed once per scope: again only for other runs (a behaviour that one release shows
        in every run and an older one in its static programs only)."""
        keys = [(v.variant, repr(sorted(v.scope().items()))) for v in self.variants]
        twice = sorted({name for name, scope in keys if keys.count((name, scope)) > 1})
        if twice:
            raise ValueError(f"variant {twice[0]!r} is listed twice with the same scope")
        return self


def check_backends(framework: str, entries: list, raw_entries, path: Path) -> None:
    """A scope's backends are the room's own words: one it does not offer is a typo that would bound
    nothing (SpecError naming the file and line). Rooms outside the registry are not checked."""
    from ..runners import ROOMS, offers
    if framework not in ROOMS:
        return
    offered = {run.get("backend") for run in offers(framework).runs} - {None}
    for n, entry in enumerate(entries):
        unknown = [b for b in entry.backends if b not in offered]
        if unknown:
            raise SpecError(f"{path}:{raw_entries.item_lines[n]}: backend {unknown[0]!r} is not one the "
                            f"{framework} room offers ({', '.join(sorted(offered)) or 'none'})")


def load_known(framework: str, rooms: Path = RUNNERS_DIR) -> list[KnownVariant]:
    """The framework's semantic variants (all versions and runs), from <rooms>/<framework>/known.yaml;
    an absent file means none. Each variant's snippet must exist in the room's confirm/ folder."""
    path = Path(rooms) / framework / "known.yaml"
    if not path.exists():
        return []
    raw = load_yaml(path)
    variants = validate(KnownFile, raw if raw is not None else {}, path).variants
    check_backends(framework, variants, raw["variants"], path)
    for n, variant in enumerate(variants):
        snippet = Path(rooms) / framework / "confirm" / Path(snippet_path(framework, variant.variant)).name
        if not snippet.is_file():
            raise SpecError(f"{path}:{raw['variants'].item_lines[n]}: variant {variant.variant!r} has no "
                            f"confirming snippet {snippet}")
        try:
            variant._snippet = snippet.resolve().relative_to(REPOSITORY.resolve()).as_posix()
        except ValueError:  # rooms outside the suite's checkout (--known)
            variant._snippet = str(snippet)
    return variants


def profile(known: list[KnownVariant], run: Run) -> list[KnownVariant]:
    """The variants in force for one run; SpecError where two of them set one point of the semantics differently
    (the oracle could not run them together)."""
    from .variants import semantics
    held = [v for v in known if v.holds_for(run)]
    try:
        semantics(v.variant for v in held)
    except ValueError as exc:
        raise SpecError(f"conformance/runners/{run.framework}/known.yaml: {exc}, both in force for "
                        f"{run.describe()}") from None
    return held
