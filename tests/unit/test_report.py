"""Report building from synthetic results and asv files (no framework needed)."""
import re

import pandas as pd

from conformance.bench import load_benchmarks
from conformance.report import build
from conftest import INSTANCES, write_asv

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
    assert 'href="./results/torch.json"' in page


def test_verdict_cells_and_documented_links(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    first = page.split(f'data-case="{INSTANCES[0].id}"', 1)[1].split("</tr>", 1)[0]
    assert 'class="cell v-documented"' in first and 'href="https://example.org/doc"' in first
    assert "changed by max 1e-3" in first
    assert 'class="cell v-error" title="error | crashed: SIGSEGV"' in page
    assert page.count('class="cell v-missing"') >= len(INSTANCES)  # the whole mindspore column


def test_undocumented_divergences_listed_first(report_dir):
    page = build(report_dir / "results", report_dir, bench_dir=None).read_text()
    listed = page.split('id="undocumented-list"', 1)[1].split("</table>", 1)[0]
    assert f'href="#{INSTANCES[3].id}"' in listed and "undocumented one" in listed
    assert INSTANCES[0].id not in listed  # documented
    assert page.index('id="undocumented"') < page.index('id="seeds"')
    assert f'id="{INSTANCES[3].id}"' in page.split('id="matrix"', 1)[1]


def test_summary_csv(report_dir):
    build(report_dir / "results", report_dir, bench_dir=None)
    table = pd.read_csv(report_dir / "summary.csv")
    assert set(table.framework) == {"torch", "tensorflow"}
    torch = table[table.framework == "torch"]
    assert len(torch) == len(INSTANCES)
    assert torch.set_index("id").loc[INSTANCES[0].id, "cell"] == "documented"
    assert torch.cell.value_counts()["divergence"] == 1


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
