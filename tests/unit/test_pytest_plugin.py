"""The pytest plugin (conformance/pytest_plugin.py) in a user's own test suite, run by pytest in a child process.
Without any framework: the suite's conftest stands a synthetic audit in for conformance.audit."""
import json
import subprocess
import sys

CONFTEST = '''
import conformance.auditor as auditor
from conformance.auditor.observe import Inventory, Layer, Param


def synthetic(model, optimizer, step, framework, steps=3):
    """Stands in for a probe: a model named "plain list" holds an unregistered block; "clean" holds none."""
    if framework != "torch":
        auditor.probe_class(framework)  # the real audit's refusal of a framework it has no room for
    if model == "raises":
        raise auditor.AuditError("step 1 of 3 raised ValueError: nan")
    params = [Param(name="head.w", layer="head", layer_type="Linear", size=4, trainable=True, statistic=False,
                    registered=True, in_optimizer=True)]
    layers = []
    if model == "plain list":
        params.append(Param(name="blocks[0].w", layer="blocks[0]", layer_type="Linear", size=4, trainable=True,
                            statistic=False, registered=False, in_optimizer=False))
        layers.append(Layer(path="blocks[0]", type="Block", registered=False))
    inventory = Inventory(framework=framework, version="2.13.0", model_type="Net", params=params, layers=layers,
                          decay_settings=[], has_modes=True)
    return auditor.report(inventory, [])


auditor.audit = synthetic
'''

TESTS = '''
def test_clean(conformance_audit):
    assert conformance_audit("clean", None, lambda: None, framework="torch").findings == []


def test_plain_list(conformance_audit):
    conformance_audit("plain list", None, lambda: None, framework="torch")


def test_raises(conformance_audit):
    conformance_audit("raises", None, lambda: None, framework="torch")


def test_unknown_framework(conformance_audit):
    conformance_audit("clean", None, lambda: None, framework="jaxx")
'''


def pytest_in(tmp_path, *args):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_model.py").write_text(TESTS)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           str(tmp_path / "test_model.py"), "--junitxml", str(tmp_path / "junit.xml"), *args],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_the_fixture_fails_a_test_with_its_findings_and_writes_them_as_sarif(tmp_path):
    done = pytest_in(tmp_path, "--conformance-sarif", str(tmp_path / "audit.sarif"))
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "1 passed" in out and "3 failed" in out
    assert "unregistered (1)" in out and "blocks[0] (Block)" in out  # the audit's table is the failure
    assert "step 1 of 3 raised ValueError: nan" in out and "unknown framework 'jaxx'" in out
    assert "Traceback" not in out
    run = json.loads((tmp_path / "audit.sarif").read_text())["runs"][0]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in run["results"]] == [
        ("unregistered", 6)]
    assert run["invocations"][0]["executionSuccessful"] is False  # test_raises did not finish its steps


def test_the_allow_file_is_the_baseline(tmp_path):
    (tmp_path / "allow.yaml").write_text("allow:\n  - {kind: unregistered, subject: 'blocks*', reason: migrating}\n")
    done = pytest_in(tmp_path, "--conformance-allow", str(tmp_path / "allow.yaml"), "--conformance-sarif",
                     str(tmp_path / "audit.sarif"), "-k", "clean or plain_list")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((tmp_path / "audit.sarif").read_text())["runs"][0]["results"][0]
    assert result["suppressions"] == [{"kind": "external", "justification": "migrating"}]


def test_a_bad_option_is_one_line(tmp_path):
    (tmp_path / "allow.yaml").write_text("allow: [\n")
    done = pytest_in(tmp_path, "--conformance-allow", str(tmp_path / "allow.yaml"))
    assert done.returncode != 0 and "--conformance-allow:" in done.stdout + done.stderr
    done = pytest_in(tmp_path, "--conformance-sarif", "/dev/null")
    assert done.returncode == 4 and "--conformance-sarif /dev/null: a device, FIFO or link" in done.stderr
