"""The package's layers, read from its source (ast: nothing is imported): the kernel imports nothing of
the package above it, a room's code nothing of the engine, the report nothing of the engine's
contract, ranks or worker, and the auditor nothing of the engine."""
import ast
from pathlib import Path

import pytest

from conformance.runners import ROOMS

PACKAGE = Path(__file__).resolve().parents[2] / "conformance"

# why -> (the modules it binds, the imports they may not make, the imports that stay allowed among those)
RULES = {
    "the kernel imports nothing of the package above it": (
        ["conformance.kernel"], ["conformance"], ["conformance.kernel"]),
    "a room imports nothing of the engine": (
        [f"conformance.runners.{room}" for room in ROOMS], ["conformance.engine"], []),
    "the report imports nothing of the engine's contract, ranks or worker": (
        ["conformance.report"], ["conformance.engine.contract", "conformance.engine.ranks", "conformance.engine.worker"], []),
    "the auditor imports nothing of the engine": (
        ["conformance.auditor"], ["conformance.engine"], []),
}
# a room's tests hold its adapter to hand-written code by running cases through the engine
EXEMPT = [f"conformance.runners.{room}.tests" for room in ROOMS]


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def imports(source: str, module: str, package: bool) -> list[tuple[int, list[str]]]:
    """(line, names) of every import statement in `source`, at any depth, relative ones resolved
    against `module` (`package`: it is a package's __init__); `from X import a` names X and X.a, as a
    may be a module."""
    found = []
    here = module if package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, [alias.name]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            name = ".".join(part for part in (base if node.level else "", node.module or "") if part)
            found.append((node.lineno, [name, *(f"{name}.{alias.name}" for alias in node.names if alias.name != "*")]))
    return found


def violations(source: str, module: str, package: bool = False) -> list[str]:
    """One line per import statement of `source` (the module `module`) that breaks a rule."""
    if any(within(module, exempt) for exempt in EXEMPT):
        return []
    found = []
    for why, (bound, forbidden, allowed) in RULES.items():
        if not any(within(module, b) for b in bound):
            continue
        for line, names in imports(source, module, package):
            broken = [n for n in names if any(within(n, f) for f in forbidden) and not any(within(n, a) for a in allowed)]
            if broken:
                found.append(f"{module}:{line} imports {broken[0]}: {why}")
    return found


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        package = parts[-1] == "__init__"
        yield path, ".".join(parts[:-1] if package else parts), package


def test_the_package_keeps_its_layers():
    found = [v for path, module, package in modules()
             for v in violations(path.read_text(encoding="utf-8"), module, package)]
    assert found == []


def test_every_rule_binds_modules_that_exist():
    names = {module for _, module, _ in modules()}
    for why, (bound, _, _) in RULES.items():
        for prefix in bound:
            assert any(within(name, prefix) for name in names), f"{why}: no module {prefix}"


@pytest.mark.parametrize("module, source, package", [
    ("conformance.kernel.files", "from ..engine.worker import Worker", False),
    ("conformance.kernel.files", "from .. import results", False),
    ("conformance.kernel", "import conformance.oracle.known", True),
    ("conformance.runners.tensorflow.workers", "from conformance.engine.ranks import Ranks", False),
    ("conformance.runners.torch.runner", "def build():\n    from ...engine import scenario", False),
    ("conformance.report.docs", "from ..engine.contract import check_run", False),
    ("conformance.report.site", "from ..engine import worker", False),
    ("conformance.auditor.cli", "from ..engine.judge import time_limit", False),
    ("conformance.auditor", "from ..engine import judge", True),
])
def test_an_import_across_the_layers_is_found(module, source, package):
    found = violations(source, module, package)
    assert len(found) == 1 and found[0].startswith(f"{module}:"), found


@pytest.mark.parametrize("module, source, package", [
    ("conformance.kernel", "from .files import lock\nfrom . import lines", True),
    ("conformance.kernel.lines", "import os, sys, traceback", False),
    ("conformance.runners.tensorflow.workers", "from conformance.kernel.processes import die_with_parent", False),
    ("conformance.runners.torch.tests.common", "from conformance.engine.scenario import observe", False),
    ("conformance.report.page", "from ..kernel.files import write_atomic\nfrom ..expected import load_expected", False),
    ("conformance.auditor.cli", "from ..kernel.lines import one_line", False),
    ("conformance.engine.worker", "from .ranks import Ranks", False),
])
def test_an_import_within_the_layers_passes(module, source, package):
    assert violations(source, module, package) == []
