"""A room's manifest, conformance/runners/<framework>/room.yaml: its tox envs (one per framework version),
what each installs, and the modules the framework brings. The registry (ROOMS) reads it; tox.ini,
asv.conf.json and the benchmarks are written by hand and tests/unit/test_manifests.py holds them to it.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from ..spec.safe_yaml import SpecError, load_yaml, validate

RUNNERS_DIR = Path(__file__).parent


def _requirement(text: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement
    try:
        Requirement(text)
    except InvalidRequirement:
        raise ValueError(f"not a pip requirement: {text[:60]!r}") from None
    return text


class Env(BaseModel):
    """One tox env: one version of the framework."""
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z]+[0-9]*$")
    deps: list[str] = Field(min_length=1)  # the framework's packages, as tox's deps pins them
    extras: list[str] = []                 # what else it needs pinned beside them (numpy<2)
    python: Optional[str] = Field(None, pattern=r"^3\.[0-9]+$")  # where tox's own Python will not do
    # why the env is in neither tox label (tests: CI; frameworks: the main job); null: it is in both
    outside_labels: Optional[str] = Field(None, min_length=1)
    bench: bool = True  # in tox's [bench] envs, and an asv.conf.json include entry
    # asv's env only: what the tox env gets from the suite's own dependencies, which asv does not install
    bench_extras: list[str] = []

    @field_validator("deps", "extras", "bench_extras")
    @classmethod
    def _pins(cls, reqs):
        return [_requirement(r) for r in reqs]

    @model_validator(mode="after")
    def _benchmarked_only_in_the_labels(self):
        # `tox -e bench` runs in the envs `tox -m frameworks` created
        if self.bench and self.outside_labels:
            raise ValueError("bench: an env outside the labels is never created for `tox -e bench`")
        return self


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order: int = Field(ge=1)  # the room's place in the report's order
    modules: list[str] = Field(min_length=1)  # the top-level modules the framework brings
    envs: list[Env] = Field(min_length=1)
    _order_line: int = PrivateAttr(0)


def load_manifest(framework: str, rooms: Path = RUNNERS_DIR) -> Manifest:
    """The room's manifest (SpecError, one line naming file and line, when it is malformed)."""
    path = rooms / framework / "room.yaml"
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(f"{path}:1: expected a mapping with order, modules and envs")
    manifest = validate(Manifest, data, path)
    names = [env.name for env in manifest.envs]
    for i, name in enumerate(names):
        # tox -e <framework> runs the room; `tox -e bench` takes the room from an env name without its digits
        if re.sub(r"[0-9]+$", "", name) != framework or name in names[:i]:
            raise SpecError(f"{path}:{data['envs'].item_lines[i]}: env {name!r}: the envs are named "
                            f"{framework!r}, then {framework!r} with a version's digits, each once")
    if framework not in names:
        raise SpecError(f"{path}:{data.key_lines['envs']}: no env named {framework!r}, which `tox -e {framework}` runs")
    manifest._order_line = data.key_lines["order"]
    return manifest


def load_rooms(rooms: Path = RUNNERS_DIR) -> dict[str, Manifest]:
    """Every room's manifest, in the report's order."""
    manifests = {path.parent.name: load_manifest(path.parent.name, rooms) for path in sorted(rooms.glob("*/room.yaml"))}
    seen = {}
    for framework, manifest in manifests.items():
        if manifest.order in seen:
            raise SpecError(f"{rooms / framework / 'room.yaml'}:{manifest._order_line}: order {manifest.order} is also "
                            f"{seen[manifest.order]}'s")
        seen[manifest.order] = framework
    return dict(sorted(manifests.items(), key=lambda item: item[1].order))
