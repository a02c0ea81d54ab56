"""The audit's document as CI reads it (conformance/auditor/formats.py): JUnit XML and SARIF 2.1.0, the --allow
file as the baseline. Without any framework: the findings come from synthetic observations."""
import json
import xml.etree.ElementTree as ET

from conformance.auditor import report
from conformance.auditor.cli import Allow, document
from conformance.auditor.formats import junit, sarif
from conformance.auditor.kinds import KINDS
from conformance.auditor.observe import Layer
from test_audit import inventory, param

USER = "def helper():\n    pass\n\n\ndef build():\n    return {}\n"


def audited(tmp_path, allow=(), error=None, clean=False):
    """The document of an audit of tmp_path/user.py:build: two unregistered blocks and one parameter the
    optimizer misses, or none of them (clean)."""
    (tmp_path / "user.py").write_text(USER)
    params = [param("head.w", layer="head")]
    layers = []
    if not clean:
        params += [param("extra.w", layer="extra", in_optimizer=False)]
        for n in range(2):
            params.append(param(f"blocks[{n}].w", layer=f"blocks[{n}]", registered=False, in_optimizer=False))
            layers.append(Layer(path=f"blocks[{n}]", type="Block", registered=False))
    result = report(inventory(params, layers=layers), [])
    return document(f"{tmp_path / 'user.py'}:build", "torch", 3, result, list(allow), error)


def test_junit_is_a_test_per_kind_failed_by_its_findings_outside_allow(tmp_path):
    allow = [Allow(kind="not-in-optimizer", subject="extra.*", reason="a frozen head, on purpose")]
    suite = ET.fromstring(junit(audited(tmp_path, allow)))
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert list(cases) == list(KINDS) and suite.get("tests") == str(len(KINDS))
    assert suite.get("failures") == "1" and suite.get("errors") == "0"
    failure = cases["unregistered"].find("failure")
    assert failure.get("message").startswith("2 ") and failure.text.count("\n") == 1 and "blocks[1]" in failure.text
    assert cases["not-in-optimizer"].find("failure") is None
    assert "extra.w" in cases["not-in-optimizer"].find("system-out").text


def test_junit_of_a_clean_model_passes_and_of_an_unfinished_audit_errs(tmp_path):
    suite = ET.fromstring(junit(audited(tmp_path, clean=True)))
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")
    assert not [c for c in suite.iter("testcase") if len(c)]
    suite = ET.fromstring(junit(audited(tmp_path, error="step 2 of 3 raised ValueError: nan")))
    assert suite.get("errors") == "1" and suite.find("testcase/error").get("message").endswith("nan")


def test_sarif_is_a_result_per_finding_at_the_functions_line_those_allowed_suppressed(tmp_path):
    allow = [Allow(kind="unregistered", subject="blocks[[]0]", reason="migrating")]
    doc = json.loads(sarif(audited(tmp_path, allow)))
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == list(KINDS)
    results = run["results"]
    assert sorted((r["ruleId"], "suppressions" in r) for r in results) == [
        ("not-in-optimizer", False), ("unregistered", False), ("unregistered", True)]
    suppressed = next(r for r in results if "suppressions" in r)
    assert suppressed["suppressions"] == [{"kind": "external", "justification": "migrating"}]
    assert "blocks[0]" in suppressed["message"]["text"]
    region = results[0]["locations"][0]["physicalLocation"]
    assert region["region"] == {"startLine": 5} and region["artifactLocation"]["uri"].endswith("/user.py")
    assert len({r["partialFingerprints"]["findingSubject/v1"] for r in results}) == 3
    assert run["invocations"] == [{"executionSuccessful": True}]


def test_sarif_of_a_clean_model_has_no_result_and_of_an_unfinished_audit_says_why(tmp_path):
    assert json.loads(sarif(audited(tmp_path, clean=True)))["runs"][0]["results"] == []
    run = json.loads(sarif(audited(tmp_path, error="step 1 of 3 hung")))["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is False
    assert run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"].endswith("user.py:build: step 1 of 3 hung")


def test_sarif_of_several_audits_is_one_run_with_the_results_of_each(tmp_path):
    first, second = audited(tmp_path), audited(tmp_path)
    second["target"] = second["target"].replace(":build", ":helper")
    run = json.loads(sarif(first, second))["runs"][0]
    lines = [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in run["results"]]
    assert sorted(set(lines)) == [1, 5] and len(lines) == 2 * len(first["findings"])
    assert len({r["partialFingerprints"]["findingSubject/v1"] for r in run["results"]}) == len(lines)


def test_a_target_that_is_no_python_file_still_gets_a_location(tmp_path):
    doc = audited(tmp_path)
    doc["target"] = f"{tmp_path / 'gone.py'}:build"
    region = json.loads(sarif(doc))["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 1}
