"""Every framework room has the same files, declares what it offers without importing its framework,
and holds one standalone confirm snippet per variant of its known.yaml (no framework needed here)."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.expected import load_expected
from conformance.oracle.known import RUNNERS_DIR, load_known, snippet_path
from conformance.run import AXIS, Run
from conformance.runners import ROOMS, adapter_path, offers, room
from conformance.runners.manifest import load_manifest, load_rooms
from conformance.spec import SpecError

FILES = ("__init__.py", "runner.py", "graph.py", "trainer.py", "known.yaml", "expected.yaml", "room.yaml", "confirm", "tests")


@pytest.mark.parametrize("framework", ROOMS)
def test_a_room_has_the_same_files(framework):
    folder = RUNNERS_DIR / framework
    missing = [name for name in FILES if not (folder / name).exists()]
    assert not missing, f"conformance/runners/{framework} lacks {missing}"
    assert adapter_path(framework).startswith(f"conformance.runners.{framework}.")
    assert offers(framework).runs


@pytest.mark.parametrize("framework", ROOMS)
def test_a_room_names_another_adapter_only_for_runs_it_offers(framework):
    """Each ADAPTERS entry of a room names run axes, a class of the room, and picks at least one run it offers."""
    runs = offers(framework).every_run(framework)
    for axes, path in getattr(room(framework), "ADAPTERS", ()):
        assert set(axes) <= set(AXIS) and path.startswith(f"conformance.runners.{framework}.")
        assert any(adapter_path(framework, run) == path for run in runs), f"{axes} picks none of {framework}'s runs"


def test_a_run_may_have_an_adapter_class_of_its_own():
    """paddle's static program has its own class; every other run, graph mode's default backend and a run the
    room does not offer (its adapter refuses it in one line) get the room's ADAPTER."""
    static = adapter_path("paddle", Run("paddle", mode="graph", backend="static"))
    assert static == "conformance.runners.paddle.graph:StaticRunner"
    for run in offers("paddle").every_run("paddle"):
        assert (adapter_path("paddle", run) == static) == (run.backend == "static")
    for run in (Run("paddle", mode="graph"), Run("paddle", mode="graph", backend="inductor"), None):
        assert adapter_path("paddle", run) == room("paddle").ADAPTER


def test_the_registry_imports_no_framework():
    """Reading every room's declarations imports none of the frameworks (the parent process of a run,
    the report and this env never have them)."""
    modules = sorted({module for manifest in load_rooms().values() for module in manifest.modules})
    code = ("import sys; from conformance.runners import ROOMS, offers\n"
            "[offers(f) for f in ROOMS]\n"
            f"print(sorted({set(modules)!r} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


ROOM_YAML = """order: 1
modules: [torch]
envs:
  - name: torch
    deps: [torch==2.13.0]
  - name: torch211
    deps: [torch==2.11.0]
    bench: false
    outside_labels: too large for CI
"""


@pytest.mark.parametrize("old, new, line, message", [
    ("order: 1", "order: first", 1, "order: Input should be a valid integer"),
    ("modules: [torch]", "modules: []", 2, "modules: List should have at least 1 item"),
    ("    deps: [torch==2.13.0]", "    deps: [torch=2.13.0]", 5, "not a pip requirement: 'torch=2.13.0'"),
    ("    bench: false\n", "", 6, "bench: an env outside the labels is never created for `tox -e bench`"),
    ("  - name: torch211", "  - name: torch211\n    python: 3.12", 7, "envs.1.python: Input should be a valid string"),
    ("  - name: torch211", "  - name: pytorch211", 6, "env 'pytorch211': the envs are named 'torch', then"),
    ("  - name: torch\n", "  - name: torch2\n", 3, "no env named 'torch', which `tox -e torch` runs"),
    ("    outside_labels", "    label", 9, "unknown key 'envs.1.label'"),
])
def test_a_bad_manifest_is_one_line_naming_file_and_line(tmp_path, old, new, line, message):
    (tmp_path / "torch").mkdir()
    path = tmp_path / "torch" / "room.yaml"
    assert old in ROOM_YAML
    path.write_text(ROOM_YAML.replace(old, new))
    with pytest.raises(SpecError) as err:
        load_manifest("torch", tmp_path)
    assert str(err.value).startswith(f"{path}:{line}: ") and message in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


def test_two_rooms_in_one_place_of_the_order_is_one_line(tmp_path):
    for framework in ("torch", "paddle"):
        (tmp_path / framework).mkdir()
        (tmp_path / framework / "room.yaml").write_text(ROOM_YAML.replace("torch", framework))
    with pytest.raises(SpecError, match=r"torch/room.yaml:1: order 1 is also paddle's$"):
        load_rooms(tmp_path)


@pytest.mark.parametrize("framework", ROOMS)
def test_one_snippet_per_variant_and_no_other(framework):
    named = {Path(snippet_path(framework, v.variant)).name for v in load_known(framework)}
    present = {p.name for p in (RUNNERS_DIR / framework / "confirm").glob("*.py")}
    assert present == named, (f"confirm/ files without a variant: {sorted(present - named)}; "
                              f"variants without a file: {sorted(named - present)}")


@pytest.mark.parametrize("snippet", sorted(RUNNERS_DIR.glob("*/confirm/*.py")), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_a_snippet_stands_alone_and_asserts(snippet):
    tree = ast.parse(snippet.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    assert "conformance" not in imported, "a confirm snippet runs with no project import"
    tests = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    assert tests, "pytest collects its test_ functions"
    assert any(isinstance(n, ast.Assert) for n in ast.walk(tree)), "it asserts what it shows"
    assert ast.get_docstring(tree), "its docstring names the variant and the page"


@pytest.mark.parametrize("framework", ROOMS)
def test_expected_outcomes_load(framework):
    for entry in load_expected(framework):
        assert entry.why.strip()


def test_the_room_package_is_declarations_only():
    for framework in ROOMS:
        tree = ast.parse((RUNNERS_DIR / framework / "__init__.py").read_text())
        modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert modules <= {"base", "trainer"}, (framework, modules)
        assert room(framework).OFFERS.devices
