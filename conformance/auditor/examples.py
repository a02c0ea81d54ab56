"""The audit's examples (examples/audit/<framework>/) and what each must give (its expected.yaml),
for the rooms' tests: every example is held to its exact findings."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from ..spec.safe_yaml import load_yaml

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples" / "audit"


def expected(framework: str, version: str | None = None) -> dict[str, dict[str, tuple]]:
    """{FILE.py:FUNC: {kind: (variant, sorted subjects)}} of the framework's examples. A kind with
    `versions` (a PEP 440 specifier) is expected only where the installed `version` falls in it."""
    from packaging.specifiers import SpecifierSet
    path = EXAMPLES_DIR / framework / "expected.yaml"
    raw = load_yaml(path) or {}
    out = {}
    for target, kinds in raw.items():
        out[target] = {}
        for kind, spec in (kinds or {}).items():
            if "versions" in spec:
                if version is None:
                    raise ValueError(f"{path}: {target} {kind} holds for versions {spec['versions']}: "
                                     "pass the installed version")
                if version not in SpecifierSet(spec["versions"], prereleases=True):
                    continue
            out[target][kind] = (spec.get("variant"), sorted(spec["subjects"]))
    return out


def example(framework: str, file: str):
    """The example module FILE.py, loaded afresh, its folder on sys.path as `python FILE` would put it."""
    folder = EXAMPLES_DIR / framework
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"audit_example_{framework}_{file[:-3]}", folder / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(framework: str, target: str) -> dict:
    """FUNC() of the example FILE.py:FUNC."""
    file, func = target.split(":")
    return getattr(example(framework, file), func)()


def observed(report) -> dict[str, tuple]:
    """An AuditReport in expected()'s form."""
    out: dict[str, tuple] = {}
    for finding in report.findings:
        variant, subjects = out.get(finding.kind, (finding.variant, []))
        out[finding.kind] = (variant, sorted([*subjects, finding.subject]))
    return out


def run_cli(framework: str, tmp_path: Path, target: str, *options: str) -> subprocess.CompletedProcess:
    """`python -m conformance audit TARGET --framework F --json tmp_path/audit.json OPTIONS`, run in
    tmp_path (what a framework dumps beside it stays there), for the rooms' command-line tests."""
    return subprocess.run([sys.executable, "-m", "conformance", "audit", target, "--framework", framework,
                           "--json", str(tmp_path / "audit.json"), *options],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
