"""The audit's document (cli.document) in the formats CI reads: JUnit XML (a test per kind of finding) and
SARIF 2.1.0 (GitHub code scanning: a result per finding, at FUNC's line of FILE.py). The --allow file is the
baseline: an allowed finding is a skipped part of its test, a suppressed SARIF result."""
from __future__ import annotations

import ast
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from .kinds import KINDS

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL = "conformance audit"


def _line(finding: dict) -> str:
    steps = f" (steps {','.join(str(s + 1) for s in finding['steps'])})" if finding["steps"] else ""
    why = f"; explained by {finding['variant']}" + (f": {finding['link']}" if finding["link"] else "") \
        if finding["variant"] else ""
    return f"{finding['subject']} ({finding['layer_type']}){steps}: {finding['detail']}{why}"


def junit(doc: dict) -> str:
    """One testsuite of one testcase per kind: it fails with the kind's findings outside --allow; an audit that
    could not finish is one more testcase, in error."""
    suite = ET.Element("testsuite", name=f"{TOOL} {doc['target']}")
    failures = errors = 0
    for kind, meta in KINDS.items():
        found = [f for f in doc["findings"] if f["kind"] == kind]
        case = ET.SubElement(suite, "testcase", classname=TOOL, name=kind)
        failing = [f for f in found if not f["allowed"]]
        if failing:
            failures += 1
            failure = ET.SubElement(case, "failure", type=kind, message=f"{len(failing)} {meta.title}")
            failure.text = "\n".join(_line(f) for f in failing)
        allowed = [f for f in found if f["allowed"]]
        if allowed:
            ET.SubElement(case, "system-out").text = "allowed by --allow:\n" + "\n".join(_line(f) for f in allowed)
    if doc["error"]:
        errors += 1
        case = ET.SubElement(suite, "testcase", classname=TOOL, name="the audit's steps")
        ET.SubElement(case, "error", message=doc["error"])
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def _func_line(target: str) -> int:
    """The line of `def FUNC` in FILE.py (read, never imported), else 1."""
    file, _, func = target.rpartition(":")
    try:
        tree = ast.parse(Path(file).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return 1
    return next((node.lineno for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func), 1)


def sarif(*docs: dict) -> str:
    """One run of the tool over these audits: a rule per kind, a result per finding at FUNC's line (an allowed one
    suppressed, with its --allow reason), and whether every audit finished."""
    results = []
    for doc in docs:
        file = doc["target"].rpartition(":")[0]
        location = {"physicalLocation": {"artifactLocation": {"uri": Path(file).as_posix()},
                                         "region": {"startLine": _func_line(doc["target"])}}}
        for f in doc["findings"]:
            result = {"ruleId": f["kind"], "level": "error",
                      "message": {"text": f"{doc['model_type'] or 'the model'}: {_line(f)}"},
                      "locations": [location],
                      "partialFingerprints": {"findingSubject/v1": f"{doc['target']}:{f['kind']}:{f['subject']}"},
                      "properties": {"framework": doc["framework"], "version": doc["version"]}}
            if f["allowed"]:
                result["suppressions"] = [{"kind": "external", "justification": f.get("allowed_because") or "--allow"}]
            results.append(result)
    errors = [f"{doc['target']}: {doc['error']}" for doc in docs if doc["error"]]
    invocation = {"executionSuccessful": not errors}
    if errors:
        invocation["toolExecutionNotifications"] = [{"level": "error", "message": {"text": e}} for e in errors]
    rules = [{"id": kind, "shortDescription": {"text": meta.title}} for kind, meta in KINDS.items()]
    run = {"tool": {"driver": {"name": TOOL, "rules": rules}}, "invocations": [invocation], "results": results}
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=1, allow_nan=False)
