"""The spec as instances: case files loaded, each case's matrix and variants resolved."""
from __future__ import annotations

import copy
import hashlib
import itertools
from pathlib import Path

from pydantic import ValidationError

from .model import AXES, TOPICS, Case, CaseFile, Instance, instance_count
from .safe_yaml import SpecError, describe_error, validate, load_yaml

SPEC_DIR = Path(__file__).parent / "cases"
MAX_INSTANCES = 20000


def _set_dotted(data: dict, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        data = data[key]
    data[last] = value


def expand(case: Case, topic: str, source: str) -> list[Instance]:
    axes = list(case.matrix.items())
    if case.variants:
        axes.append(("variant", list(case.variants)))
    if not axes:
        return [Instance(id=case.id, case=case, topic=topic, axes={}, source=source)]
    out = []
    for combo in itertools.product(*(values for _, values in axes)):
        data = case.model_dump()  # matrix and variants stay: `when` is checked against them
        chosen = {}
        for (axis, _), value in zip(axes, combo):
            chosen[axis] = str(value)
            if axis == "variant":
                for dotted, override in case.variants[value].items():
                    try:
                        _set_dotted(data, dotted, copy.deepcopy(override))
                    except (KeyError, TypeError):
                        raise SpecError(f"{source}: variant {value!r} sets unknown field {dotted!r}") from None
            else:
                _set_dotted(data, ".".join(AXES[axis]), value)
        try:
            concrete = Case.model_validate(data)
        except ValidationError as exc:
            raise SpecError(f"{source}: {case.id}[{','.join(chosen.values())}]: "
                            f"{describe_error(exc.errors()[0])}") from None
        out.append(Instance(id=f"{case.id}[{','.join(chosen.values())}]", case=concrete,
                            topic=topic, axes=chosen, source=source))
    return out


def load_spec(spec_dir: Path = SPEC_DIR) -> list[Instance]:
    files = sorted(Path(spec_dir).glob("*.yaml"))
    other = sorted(p.name for p in Path(spec_dir).glob("*.yml"))
    if other:  # never skipped without a word
        raise SpecError(f"{Path(spec_dir) / other[0]}: spec files end in .yaml; rename it")
    if not files:
        raise SpecError(f"{spec_dir}: no spec files (*.yaml)")
    cases, seen, total = [], {}, 0
    for path in files:
        raw = load_yaml(path)
        parsed = validate(CaseFile, raw, path)
        for index, case in enumerate(parsed.cases):
            line = raw["cases"].item_lines[index]
            if case.id in seen:
                raise SpecError(f"{path}:{line}: duplicate case id {case.id!r} (first at {seen[case.id]})")
            seen[case.id] = f"{path.name}:{line}"
            total += instance_count(case)
            if total > MAX_INSTANCES:  # counted before any is built
                raise SpecError(f"{path}:{line}: the spec makes over {MAX_INSTANCES} instances by this case")
            cases.append((case, parsed.topic, f"{path.name}:{line}"))
    instances = [inst for case, topic, source in cases for inst in expand(case, topic, source)]
    return sorted(instances, key=lambda inst: TOPICS.index(inst.topic))  # seeds first


def smoke(instances: list[Instance]) -> list[Instance]:
    """The smoke subset of these instances: every one of the seeds, and those of the first case of each other
    topic (in spec order). What a room's smoke runs execute (runners.base.Offers.smoke)."""
    first: dict[str, str] = {}
    for inst in instances:
        first.setdefault(inst.topic, inst.case.id)
    return [inst for inst in instances if inst.topic == "seeds" or first[inst.topic] == inst.case.id]


def spec_hash(spec_dir: Path = SPEC_DIR) -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(spec_dir).glob("*.yaml")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


