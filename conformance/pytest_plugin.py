"""The audit inside a user's own test suite: pytest loads this plugin wherever the suite is installed.

    def test_model_trains_as_written(conformance_audit):
        model = ResNet(); optimizer = torch.optim.Adam(model.parameters())
        def step(): optimizer.zero_grad(); loss_fn(model(x), y).backward(); optimizer.step()
        conformance_audit(model, optimizer, step, framework="torch")

The fixture runs `conformance.audit` on the test's own model (3 steps by default) and fails the test with the
findings' table when any is outside the allow file, or when the steps did not finish; it returns the
AuditReport. Options: `--conformance-allow FILE` (the `audit` command's --allow file: the baseline) and
`--conformance-sarif PATH` (every audit of the session in one SARIF file, each finding at its test's line,
for GitHub code scanning). pytest's own --junitxml holds each test's outcome. Nothing is imported from the
suite until a test asks for the fixture.
"""
from __future__ import annotations

from pathlib import Path

import pytest

_DOCS = pytest.StashKey[list]()


def pytest_addoption(parser):
    group = parser.getgroup("conformance", "the conformance suite's audit of a test's model (conformance_audit)")
    group.addoption("--conformance-allow", metavar="FILE",
                    help="YAML: allow: [{kind, subject (a glob), reason}]; findings it covers do not fail a test")
    group.addoption("--conformance-sarif", metavar="PATH",
                    help="write the findings of every conformance_audit of the session here, as SARIF 2.1.0")


def pytest_configure(config):
    config.stash[_DOCS] = []
    sarif = config.getoption("conformance_sarif", None)
    if sarif:
        from .auditor.cli import _not_a_file
        why = _not_a_file(Path(sarif))
        if why:
            raise pytest.UsageError(f"--conformance-sarif {sarif}: {why}")


@pytest.fixture(scope="session")
def _conformance_allow(pytestconfig):
    path = pytestconfig.getoption("conformance_allow")
    if not path:
        return []
    from .auditor.cli import load_allow
    from .spec.safe_yaml import SpecError
    try:
        return load_allow(Path(path))
    except SpecError as exc:
        raise pytest.UsageError(f"--conformance-allow: {exc}") from None


@pytest.fixture
def conformance_audit(request, _conformance_allow):
    """conformance_audit(model, optimizer, step, framework, steps=3) -> AuditReport; fails the test with the
    findings outside --conformance-allow, or when a step raised or changed nothing."""
    from .auditor import DEFAULT_STEPS, AuditError, AuditInputError, audit
    from .auditor.cli import document, table

    target = f"{request.node.path}:{getattr(request.function, '__name__', request.node.name)}"

    def run(model, optimizer, step, framework: str, steps: int = DEFAULT_STEPS):
        try:
            result = audit(model, optimizer, step, framework=framework, steps=steps)
            error = result.error
        except AuditError as exc:
            result, error = None, str(exc)
        except AuditInputError as exc:  # not a model, optimizer or framework the audit reads: the test's own error
            pytest.fail(f"conformance_audit: {exc}", pytrace=False)
        doc = document(target, framework, steps, result, _conformance_allow, error)
        request.config.stash[_DOCS].append(doc)
        if error or any(not f["allowed"] for f in doc["findings"]):
            pytest.fail(table(doc) if result is not None else f"audit of {target}: {error}", pytrace=False)
        return result
    return run


def pytest_sessionfinish(session):
    path = session.config.getoption("conformance_sarif", None)
    docs = session.config.stash.get(_DOCS, [])
    if not path:
        return
    from .auditor.formats import sarif
    from .kernel.files import write_atomic
    try:
        write_atomic(Path(path), sarif(*docs))
    except OSError as exc:
        session.config.get_terminal_writer().line(f"error: --conformance-sarif {path}: {exc.strerror or exc}", red=True)
        session.exitstatus = session.exitstatus or pytest.ExitCode.INTERNAL_ERROR
