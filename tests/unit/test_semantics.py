"""data/semantics.json (conformance/semantics.py): each semantic feature, where its rooms declare it and where the
runs observed it, valid under the committed JSON Schema."""
import json

import jsonschema

from conformance import results
from conformance.__main__ import main
from conformance.oracle.known import load_known
from conformance.semantics import DATASET_VERSION, SCHEMA, schema_text
from conftest import INSTANCES, env, record
from test_report import write_run


def test_the_committed_schema_is_the_datasets():
    assert SCHEMA.read_text() == schema_text(), "write it again: python -c 'from conformance.semantics import ...'"


def test_a_feature_lists_where_it_is_declared_and_the_runs_that_needed_it(tmp_path):
    declared = next(k for k in load_known("torch") if k.variant == "replica-grads-averaged")
    needed = results.Explanation(variants=[results.VariantRecord.of(declared)])
    folder = tmp_path / "results"
    folder.mkdir()
    cases = [record(i) for i in INSTANCES[:4]]
    cases[2] = record(INSTANCES[2], "divergence", documented=needed)
    write_run(folder, env("torch", "2.13.0"), cases)
    write_run(folder, env("torch", "2.12.0"), [record(i) for i in INSTANCES[:4]])  # a run that did not need it
    out = tmp_path / "data" / "semantics.json"
    assert main(["semantics", "--results", str(folder), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    assert data["dataset_version"] == DATASET_VERSION and data["runs_read"] == 2
    feature = data["features"]["replica-grads-averaged"]
    assert feature["cases"] == [INSTANCES[2].case.id] and feature["behaviour"] and feature["reference"]
    torch = feature["frameworks"]["torch"]
    assert [d["versions"] for d in torch["declared"]] == [declared.versions]
    assert torch["declared"][0]["link"] == str(declared.link) and torch["declared"][0]["snippet"].endswith(".py")
    assert torch["observed"] == [{"version": "2.13.0", "device": "cpu", "mode": "eager", "api": "loop", "backend": "",
                                  "replicas": "1", "engine": "", "cases": [INSTANCES[2].id]}]
    assert "paddle" in feature["frameworks"] and feature["frameworks"]["paddle"]["observed"] == []  # declared only


def test_every_variant_any_room_declares_is_a_feature_even_with_no_run(tmp_path):
    out = tmp_path / "semantics.json"
    empty = tmp_path / "none"
    empty.mkdir()
    assert main(["semantics", "--results", str(empty), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    from conformance.runners import ROOMS
    assert set(data["features"]) == {k.variant for f in ROOMS for k in load_known(f)}


def test_the_site_publishes_it_beside_the_results(report_dir, tmp_path):
    site = tmp_path / "site"
    assert main(["publish", "--results", str(report_dir / "results"), "--out", str(site)]) == 0
    data = json.loads((site / "data" / "semantics.json").read_text())
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    assert data["runs_read"] >= 1


def test_the_site_shows_each_feature_across_frameworks_and_versions_in_one_grid(tmp_path):
    """features.html: per framework version run, observed (a run needed it), declared (known.yaml holds it there,
    no run needed it) or absent."""
    import re
    declared = next(k for k in load_known("torch") if k.variant == "replica-grads-averaged")  # versions >=2.13.0
    folder = tmp_path / "results"
    folder.mkdir()
    cases = [record(i) for i in INSTANCES[:4]]
    cases[1] = record(INSTANCES[1], "divergence",
                      documented=results.Explanation(variants=[results.VariantRecord.of(declared)]))
    write_run(folder, env("torch", "2.13.0"), cases)
    write_run(folder, env("torch", "2.12.0"), [record(i) for i in INSTANCES[:4]])
    write_run(folder, env("torch", "2.14.0"), [record(i) for i in INSTANCES[:4]])
    site = tmp_path / "site"
    assert main(["publish", "--results", str(folder), "--out", str(site)]) == 0
    page = (site / "features.html").read_text()
    grid = page.split('data-feature="replica-grads-averaged"', 1)[1].split("</table>", 1)[0]
    row = grid.split('<tr data-framework="torch">', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'class="f-(\w+)" data-version="([^"]+)"', row) == [
        ("absent", "2.12.0"), ("observed", "2.13.0"), ("declared", "2.14.0")]
    assert 'href="features.html"' in (site / "index.html").read_text()


def test_the_package_installs_the_dataset_with_a_loader(tmp_path, monkeypatch):
    """--package DIR: a package pip installs (its pyproject read here as pip reads it), whose load() gives the
    dataset; its version is the dataset's major.minor with the build time as patch."""
    import importlib
    import sys
    import tomllib
    empty = tmp_path / "none"
    empty.mkdir()
    folder = tmp_path / "pkg"
    assert main(["semantics", "--results", str(empty), "--out", str(tmp_path / "s.json"), "--package", str(folder)]) == 0
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    major, minor, patch = project["version"].split(".")
    assert project["name"] == "conformance-semantics" and f"{major}.{minor}" == DATASET_VERSION.rsplit(".", 1)[0]
    assert len(patch) == 12 and patch.isdigit()
    monkeypatch.syspath_prepend(str(folder))
    module = importlib.import_module("conformance_semantics")
    try:
        data = module.load()
        assert module.DATASET_VERSION == DATASET_VERSION == data["dataset_version"]
        assert data == json.loads((tmp_path / "s.json").read_text())
        jsonschema.validate(data, json.loads((folder / "conformance_semantics" / "schema.json").read_text()))
    finally:
        sys.modules.pop("conformance_semantics", None)
