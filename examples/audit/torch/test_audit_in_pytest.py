"""The audit in your own test suite. With the suite installed, pytest loads its `conformance_audit` fixture:

    pytest examples/audit/torch/test_audit_in_pytest.py --conformance-sarif audit.sarif

The clean ResNet passes; the seed-2 ResNet (its blocks in a plain list) fails with the audit's findings,
marked xfail here so that the example stays green. `--conformance-allow FILE` takes the `audit` command's
allow file; pytest's own `--junitxml` holds each test's outcome.
"""
import pytest

from conformance.auditor.examples import build


def test_the_clean_resnet_trains_as_written(conformance_audit):
    report = conformance_audit(**build("torch", "clean_resnet.py:build"), framework="torch")
    assert report.findings == []


@pytest.mark.xfail(strict=True, reason="its blocks sit in a plain list: the audit finds them unregistered")
def test_the_seed2_resnet_trains_as_written(conformance_audit):
    conformance_audit(**build("torch", "seed2_plain_list_resnet.py:build"), framework="torch")
