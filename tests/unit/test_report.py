"""Report building from synthetic results and asv files (no framework needed)."""
import json
import re

import pandas as pd
import pytest

from conformance import results
from conformance.bench import load_benchmarks
from conformance.report import build
from conformance.schema import SPEC_DIR, load_spec

INSTANCES = load_spec(SPEC_DIR)


def env(framework, version="1.0"):
    return results.Environment(framework=framework, framework_version=version, device="cpu", mode="eager",
                               python="3.11", numpy="2.0", platform="Linux", suite_sha="abc", spec_hash="f" * 16,
                               started="2026-01-01T00:00:00+00:00")


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
                            documented=results.Documented(reason="because", link="https://example.org/doc"),
                            checks=[results.CheckRecord(check="value x @ step 1", expected="unchanged",
                                                        observed="changed by max 1e-3", held=False)])
    torch_cases[1] = record(INSTANCES[1], "error", reason="crashed: SIGSEGV")
    torch_cases[2] = record(INSTANCES[2], "unsupported", reason="cannot")
    torch_cases[3] = record(INSTANCES[3], "divergence", reason="undocumented one")
    results.write(results.Results(complete=True, environment=env("torch", "2.13.0"), cases=torch_cases),
                  res / "torch.json")
    (res / "paddle.json").write_text('{"schema_version": 1, "oops": true}')
    results.write(results.Results(complete=False, environment=env("tensorflow", "2.21.0"),
                                  cases=[record(i) for i in INSTANCES[:5]]), res / "tensorflow.json")
    return out


def rows_of(html, table_id):
    table = html.split(f'id="{table_id}"', 1)[1].split("<h2", 1)[0]
    return re.findall(r'<tr class="case-row" data-case="([^"]+)"', table)


def test_page_has_every_case_and_every_framework(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    assert rows_of(page, "matrix") == [i.id for i in INSTANCES]
    assert rows_of(page, "seed-matrix") == [i.id for i in INSTANCES if i.topic == "seeds"]
    header = page.split('id="matrix"', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'<th class="fw">(\w+)', header) == ["torch", "paddle", "mindspore", "tensorflow"]
    assert page.index('id="seeds"') < page.index('id="matrix"')
    assert "http" not in re.sub(r'href="https?://[^"]*"|title="https?://[^"]*"|https?://[^\s<"]*', "", page)


def test_strings_from_results_are_escaped(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_missing_and_malformed_results_get_their_column(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    fw = {k: v.strip() for k, v in re.findall(r'data-framework="(\w+)">.*?<td class="status">([a-z ]+)', page, re.S)}
    assert fw["mindspore"] == "not run" and fw["paddle"] == "malformed" and fw["tensorflow"] == "incomplete"
    assert "run `tox -e mindspore`" in page
    assert 'href="results/torch.json"' in page


def test_verdict_cells_and_documented_links(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    first = page.split(f'data-case="{INSTANCES[0].id}"', 1)[1].split("</tr>", 1)[0]
    assert 'class="cell v-documented"' in first and 'href="https://example.org/doc"' in first
    assert "changed by max 1e-3" in first
    assert 'class="cell v-error" title="error | crashed: SIGSEGV"' in page
    assert page.count('class="cell v-missing"') >= len(INSTANCES)  # the whole mindspore column


def test_summary_csv(report_dir):
    build(report_dir / "results", report_dir, bench_dir=None)
    table = pd.read_csv(report_dir / "summary.csv")
    assert set(table.framework) == {"torch", "tensorflow"}
    torch = table[table.framework == "torch"]
    assert len(torch) == len(INSTANCES)
    assert torch.set_index("id").loc[INSTANCES[0].id, "cell"] == "documented"
    assert torch.cell.value_counts()["divergence"] == 1


def write_asv(root, values):
    name = "benchmarks.MaskedUpdate.track_step_cost_relative"
    params = [["'torch'", "'paddle'"], ["'frozen'", "'unused'"], ["0.0", "0.9"], ["'sgd_wd'", "'adamw'"]]
    (root / "benchmarks.json").write_text(json.dumps({name: {"param_names": ["framework", "mask", "fraction",
                                                                            "optimizer"], "params": params}}))
    (root / "machine1").mkdir()
    (root / "machine1" / "machine.json").write_text("{}")
    (root / "machine1" / "abc-existing.json").write_text(json.dumps({
        "result_columns": ["result", "params"], "date": 1, "env_name": "existing",
        "results": {name: [values, params]}}))


def test_benchmarks_parsed_and_plotted(report_dir, tmp_path):
    bench = tmp_path / "asv"
    bench.mkdir()
    # itertools.product order: torch-frozen-0.0-sgd_wd, torch-frozen-0.0-adamw, torch-frozen-0.9-sgd_wd, ...
    values = [1.0, 1.0, 0.2, 0.9, 1.0, 1.0, 1.0, 1.0] + [None] * 8  # paddle skipped (not installed)
    write_asv(bench, values)
    frame = load_benchmarks(bench)
    assert len(frame) == 8 and set(frame.framework) == {"torch"}
    row = frame[(frame["mask"] == "frozen") & (frame.fraction == 0.9) & (frame.optimizer == "sgd_wd")]
    assert row.value.item() == 0.2
    page = build(report_dir / "results", report_dir, bench_dir=bench).read_text()
    assert re.search(r'<img class="bench" id="bench-plot" [^>]*src="data:image/png;base64,', page)


def test_no_benchmarks_says_so(report_dir, tmp_path):
    page = build(report_dir / "results", report_dir, bench_dir=tmp_path / "none").read_text()
    assert 'id="bench-missing"' in page
