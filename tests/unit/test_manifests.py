"""tox.ini, asv.conf.json, the registry and the benchmarks say what each room's manifest
(conformance/runners/<framework>/room.yaml) says. They are written by hand; each difference is one
line naming the file, the env and what differs. (The generated docs read the manifests themselves.)"""
import configparser
import json
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from conformance.runners import ROOMS
from conformance.runners.manifest import RUNNERS_DIR, load_rooms

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = load_rooms()
ENVS = {env.name: (framework, env) for framework, manifest in MANIFESTS.items() for env in manifest.envs}
# asv 0.6 takes a version, not a specifier ("<2" would become "==2"): asv.conf.json names the last
# numpy 1.x exactly where tox pins numpy<2
ASV_VERSIONS = {"numpy<2": "1.26.4"}


def _lines(value: str):
    """A tox setting's lines as (factor expression or None, rest): `torch,torch211: torch==2.11.0`."""
    for line in value.strip().splitlines():
        match = re.fullmatch(r"([!\w,-]+):\s+(.*)", line.strip())
        yield (match.group(1), match.group(2).strip()) if match else (None, line.strip())


def _per_env(value: str) -> dict[str, list[str]]:
    """What a setting gives each framework env, from its lines whose factors are framework envs only."""
    out = {}
    for factors, rest in _lines(value):
        names = factors.split(",") if factors else []
        if names and all(name in ENVS for name in names):
            for name in names:
                out.setdefault(name, []).append(rest)
    return out


def tox_complaints(text: str) -> list[str]:
    tox = configparser.ConfigParser(interpolation=None)  # tox's {env:...} and bash's %% are no interpolation
    tox.read_string(text)
    section = next((s for s in tox.sections() if re.fullmatch(r"testenv:\{[\w,]+\}\{,-tests\}", s)), None)
    if section is None:
        return ["tox.ini: no [testenv:{<framework envs>}{,-tests}] section"]
    listed = section.split("{")[1].rstrip("}").split(",")
    env = tox[section]
    out = [f"tox.ini env {name}: in the framework env list, in no room.yaml" for name in listed if name not in ENVS]
    out += [f"tox.ini env {name}: of {ENVS[name][0]}/room.yaml, not in the framework env list"
            for name in ENVS if name not in listed]
    dirs, rooms, deps, pythons = (_per_env(env.get(key, "")) for key in ("env_dir", "set_env", "deps", "base_python"))
    for name, (framework, declared) in ENVS.items():
        where = f"tox.ini env {name}"
        if dirs.get(name) != [f"{{toxworkdir}}{{/}}{name}"]:
            out.append(f"{where}: env_dir is {dirs.get(name)}, not ['{{toxworkdir}}{{/}}{name}']")
        if [line for line in rooms.get(name, []) if line.startswith("ROOM ")] != [f"ROOM = {framework}"]:
            out.append(f"{where}: set_env is {rooms.get(name)}, without one 'ROOM = {framework}'")
        if sorted(deps.get(name, [])) != sorted(declared.deps + declared.extras):
            out.append(f"{where}: deps pins {sorted(deps.get(name, []))}, "
                       f"{framework}/room.yaml {sorted(declared.deps + declared.extras)}")
        python = [f"python{declared.python}"] if declared.python else None
        if pythons.get(name) != python:
            out.append(f"{where}: base_python is {pythons.get(name)}, {framework}/room.yaml says {python}")
    outside = {name for name, (_, declared) in ENVS.items() if declared.outside_labels}
    for label in ("frameworks", "tests"):
        lines = [factors for factors, rest in _lines(env.get("labels", "")) if rest == label and factors]
        if len(lines) != 1:
            out.append(f"tox.ini [{section}]: labels has {len(lines)} lines for the label {label}, not 1")
            continue
        excluded = {factor[1:] for factor in lines[0].split("-") if factor[1:] in ENVS and factor.startswith("!")}
        out += [f"tox.ini env {name}: labels leave it out of {label}, its room.yaml does not"
                for name in sorted(excluded - outside)]
        out += [f"tox.ini env {name}: labels put it in {label}, its room.yaml keeps it outside"
                for name in sorted(outside - excluded)]
    benched = tox["bench"]["envs"].split() if tox.has_option("bench", "envs") else []
    wanted = [name for name, (_, declared) in ENVS.items() if declared.bench]
    out += [f"tox.ini env {name}: benchmarked in its room.yaml, missing from [bench] envs"
            for name in wanted if name not in benched]
    out += [f"tox.ini env {name}: in [bench] envs, benchmarked in no room.yaml" for name in benched if name not in wanted]
    return out


def _asv_req(requirement: str) -> tuple[str, str]:
    """A pip requirement as asv's include takes it: {name: exact version, or "" for the newest}."""
    req = Requirement(requirement)
    if not req.specifier:
        return req.name, ""
    pins = [spec.version for spec in req.specifier if spec.operator == "=="]
    return req.name, pins[0] if pins else ASV_VERSIONS.get(requirement, f"(no version for {requirement!r})")


def asv_complaints(text: str) -> list[str]:
    conf = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))  # asv's JSON takes // comment lines
    seen = [(entry.get("python"), dict(sorted(entry.get("req", {}).items()))) for entry in conf.get("include", [])]
    out = []
    for name, (framework, declared) in ENVS.items():
        if not declared.bench:
            continue
        req = dict(sorted(_asv_req(r) for r in declared.deps + declared.extras + declared.bench_extras))
        want = (declared.python or conf["pythons"][0], req)
        if want in seen:
            seen.remove(want)
        else:
            out.append(f'asv.conf.json include: env {name} of {framework}/room.yaml has no entry '
                       f'{{"python": "{want[0]}", "req": {json.dumps(req)}}}')
    out += [f'asv.conf.json include: {{"python": "{python}", "req": {json.dumps(req)}}} is no benchmarked env of a room.yaml'
            for python, req in seen]
    return out


def test_tox_ini_follows_the_manifests():
    complaints = tox_complaints((ROOT / "tox.ini").read_text())
    assert not complaints, "\n".join(complaints)


def test_asv_conf_follows_the_manifests():
    complaints = asv_complaints((ROOT / "asv.conf.json").read_text())
    assert not complaints, "\n".join(complaints)


def test_the_registry_and_the_benchmarks_follow_the_manifests():
    from benchmarks.frameworks import CASES
    folders = sorted(p.parent.name for p in RUNNERS_DIR.glob("*/__init__.py"))
    assert [f for f in folders if f not in ROOMS] == [], "conformance/runners: a room folder without a room.yaml"
    assert ROOMS == tuple(sorted(MANIFESTS, key=lambda f: MANIFESTS[f].order))
    for framework, manifest in MANIFESTS.items():
        assert framework in CASES, f"benchmarks/frameworks/{framework}.py: no Case for the room {framework}"
        assert list(CASES[framework].modules) == manifest.modules, \
            f"benchmarks/frameworks/{framework}.py: modules {CASES[framework].modules}, room.yaml {manifest.modules}"
    assert set(CASES) <= set(ROOMS), f"benchmarks/frameworks: {sorted(set(CASES) - set(ROOMS))} are no room"


TOX = (ROOT / "tox.ini").read_text()
ASV = (ROOT / "asv.conf.json").read_text()


@pytest.mark.parametrize("old, new, complaint", [
    ("    torch: torch==2.13.0", "    torch: torch==2.12.1",
     "env torch: deps pins ['accelerate', 'pytorch-lightning', 'torch==2.12.1', 'transformers'], "
     "torch/room.yaml ['accelerate', 'pytorch-lightning', 'torch==2.13.0', 'transformers']"),
    ("    mindspore,mindspore27: numpy<2\n", "    mindspore: numpy<2\n",
     "env mindspore27: deps pins ['mindspore==2.7.2'], mindspore/room.yaml ['mindspore==2.7.2', 'numpy<2']"),
    ("    jax,jax011: python3.12", "    jax: python3.12",
     "env jax011: base_python is None, jax/room.yaml says ['python3.12']"),
    ("!torch211-!torch212-!jax011-tests: tests", "!torch211-!jax011-tests: tests",
     "env torch212: labels put it in tests, its room.yaml keeps it outside"),
    ("    paddle,paddle26: ROOM = paddle", "    paddle,paddle26: ROOM = torch",
     "env paddle26: set_env is ['ROOM = torch'], without one 'ROOM = paddle'"),
    ("    jax011: {toxworkdir}{/}jax011\n", "", "env jax011: env_dir is None"),
    ("tensorflow tensorflow215 jax", "tensorflow jax", "env tensorflow215: benchmarked in its room.yaml, missing from [bench]"),
    ("jax,jax011,paddle26}", "jax,jax011,jax012,paddle26}",
     "env jax012: in the framework env list, in no room.yaml"),
    (",tensorflow215,paddle,", ",paddle,", "env tensorflow215: of tensorflow/room.yaml, not in the framework env list"),
])
def test_a_tox_ini_that_differs_is_named(old, new, complaint):
    assert old in TOX
    complaints = tox_complaints(TOX.replace(old, new))
    assert any(complaint in line and line.startswith("tox.ini") for line in complaints), complaints


@pytest.mark.parametrize("old, new, complaint", [
    ('"numpy": "1.26.4"}},\n', '"numpy": "2.0.0"}},\n',
     'env mindspore of mindspore/room.yaml has no entry {"python": "3.11", "req": {"mindspore": "", "numpy": "1.26.4"}}'),
    ('{"python": "3.12", "req": {"jax"', '{"python": "3.11", "req": {"jax"', "env jax of jax/room.yaml has no entry"),
    ('        {"python": "3.11", "req": {"paddlepaddle": "2.6.2", "setuptools": ""}},\n', "", "env paddle26 of paddle/room.yaml has no entry"),
    ('"accelerate": "", "numpy": ""', '"accelerate": ""',
     '{"python": "3.11", "req": {"accelerate": "", "pytorch-lightning": "", "torch": "2.13.0", "transformers": ""}} is no benchmarked env'),
])
def test_an_asv_conf_that_differs_is_named(old, new, complaint):
    assert old in ASV
    complaints = asv_complaints(ASV.replace(old, new, 1))
    assert any(complaint in line for line in complaints), complaints
