"""Synthetic results and asv files for the report tests (unit and browser), and headless Chromium."""
import json
import shutil
import subprocess
import tempfile

import pytest

from conformance import results
from conformance.spec import SPEC_DIR, load_spec

INSTANCES = load_spec(SPEC_DIR)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(*args):
    assert CHROMIUM, "Chromium not found: install Debian's chromium package (tox -e browser and tox -e report do)"
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def env(framework, version="1.0", device="cpu", started="2026-01-01T00:00:00+00:00"):
    return results.Environment(framework=framework, framework_version=version, device=device, mode="eager",
                               python="3.11", numpy="2.0", platform="Linux", suite_sha="abc", spec_hash="f" * 16,
                               started=started)


def record(inst, verdict="conform", **kw):
    return results.CaseRecord(id=inst.id, base_id=inst.case.id, topic=inst.topic, title=inst.case.title,
                              references=[str(r) for r in inst.case.references], axes=inst.axes,
                              source=inst.source, verdict=verdict, duration_s=0.01, **kw)


@pytest.fixture
def report_dir(tmp_path):
    out = tmp_path / "reports"
    res = out / "results"
    res.mkdir(parents=True)
    torch_cases = [record(i) for i in INSTANCES]
    torch_cases[0] = record(INSTANCES[0], "divergence", reason="<script>alert(1)</script>",
                            documented=results.Explanation(variants=[results.VariantRecord(
                                name="plain-containers-unregistered", reason="because",
                                link="https://example.org/doc", snippet="conformance/runners/torch/confirm/plain_containers_unregistered.py")]),
                            checks=[results.CheckRecord(check="value x @ step 1", expected="unchanged",
                                                        observed="changed by max 1e-3", held=False)])
    torch_cases[1] = record(INSTANCES[1], "error", reason="crashed: SIGSEGV")
    torch_cases[2] = record(INSTANCES[2], "unsupported", reason="cannot")
    torch_cases[3] = record(INSTANCES[3], "divergence", reason="undocumented one")
    results.write(results.Results(complete=True, environment=env("torch", "2.13.0"), cases=torch_cases,
                                  profile=torch_cases[0].documented.variants), res / "torch.json")
    (res / "paddle.json").write_text('{"schema_version": 1, "oops": true}')
    counter = results.VariantRecord(name="adam-shared-step-counter", reason="shared iterations", link=None,
                                    snippet="conformance/runners/tensorflow/confirm/adam_shared_step_counter.py")
    tf_cases = [record(i) for i in INSTANCES[:5]]
    tf_cases[4] = record(INSTANCES[4], "divergence", reason="resumes late",
                         explained_by=results.Explanation(variants=[counter]))
    results.write(results.Results(complete=False, environment=env("tensorflow", "2.21.0"), cases=tf_cases,
                                  profile=[counter]), res / "tensorflow.json")
    return out


def write_asv(root, values):
    """A minimal asv results tree: benchmarks.json plus one machine's results file."""
    name = "benchmarks.MaskedUpdate.track_step_cost_relative"
    params = [["'torch'", "'paddle'"], ["'frozen'", "'unused'"], ["0.0", "0.9"], ["'sgd_wd'", "'adamw'"]]
    (root / "benchmarks.json").write_text(json.dumps({name: {"param_names": ["framework", "mask", "fraction",
                                                                            "optimizer"], "params": params}}))
    (root / "machine1").mkdir()
    (root / "machine1" / "machine.json").write_text("{}")
    (root / "machine1" / "abc-existing.json").write_text(json.dumps({
        "result_columns": ["result", "params"], "date": 1, "env_name": "existing",
        "results": {name: [values, params]}}))
