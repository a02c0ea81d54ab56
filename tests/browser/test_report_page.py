"""The built report in a real browser: headless Chromium (Debian's package) renders it offline.

Checks the DOM Chromium produced, one row per case and one column per framework, the profile table
and porting notes, the benchmark plot, and saves a screenshot (reports/screenshot.png, or $CONFORMANCE_SCREENSHOT).
Set CONFORMANCE_REPORT to a built index.html to check that page instead of a synthetic one.
"""
import itertools
import os
import re
from pathlib import Path

import pytest

from conformance.report.page import build
from conformance.runners import ROOMS
from conftest import INSTANCES, chromium, write_asv

@pytest.fixture
def page(report_dir, tmp_path):
    if os.environ.get("CONFORMANCE_REPORT"):
        return Path(os.environ["CONFORMANCE_REPORT"]).resolve()
    bench = tmp_path / "asv"
    bench.mkdir()
    write_asv(bench, [1.0, 1.0, 0.2, 0.9, 1.0, 1.0, 1.0, 1.0] + [None] * 8)
    return build(report_dir / "results", report_dir, bench_dir=bench).resolve()


def test_report_renders_in_chromium(page):
    dom = chromium("--dump-dom", page.as_uri())
    matrix = dom.split('id="matrix"', 1)[1].split("<h2", 1)[0]
    rows = re.findall(r'<tr class="case-row" data-case="([^"]+)"', matrix)
    if not os.environ.get("CONFORMANCE_REPORT"):
        assert rows == [i.id for i in INSTANCES]
    assert len(rows) == len(set(rows)) > 0
    header = matrix.split("</tr>", 1)[0]
    runs = re.findall(r'<th class="fw" data-run="[^"]*">(\w+)', header)  # one column per run
    assert [name for name, _ in itertools.groupby(runs)] == list(ROOMS)
    for row in matrix.split('<tr class="case-row"')[1:]:  # a row runs to the next one (cells nest tables)
        assert row.count('<td class="cell ') == len(runs)
    assert re.search(r'<img class="bench" id="bench-plot"[^>]*src="data:image/png;base64,', dom)

    shot = Path(os.environ.get("CONFORMANCE_SCREENSHOT", "reports/screenshot.png")).resolve()
    shot.parent.mkdir(parents=True, exist_ok=True)
    chromium("--window-size=1400,2400", f"--screenshot={shot}", page.as_uri())
    assert shot.stat().st_size > 10_000


def test_profiles_and_porting_notes_in_chromium(page):
    dom = chromium("--dump-dom", page.as_uri())
    profiles = dom.split('id="profile-table"', 1)[1].split("</table>", 1)[0]
    rows = dict(re.findall(r'<tr class="profile-row" data-variant="([^"]+)">(.*?)</tr>', profiles, re.S))
    assert rows, "no variant in any profile"
    runs = profiles.split("</tr>", 1)[0].count("<th>") - 2  # after the variant and what-it-does headers
    for row in rows.values():
        assert row.count("<td") == 2 + runs
    if os.environ.get("CONFORMANCE_REPORT"):
        return
    assert set(rows) == {"plain-containers-unregistered", "adam-shared-step-counter"}
    assert 'href="https://example.org/doc"' in rows["plain-containers-unregistered"]
    assert "no upstream page" in rows["adam-shared-step-counter"]
    pairs = re.findall(r'<details class="porting" data-from="(\w+)" data-to="(\w+)"', dom)
    assert sorted(pairs) == [("tensorflow", "torch"), ("torch", "tensorflow")]  # paddle.json is malformed
    torch_to_tf = dom.split('data-from="torch" data-to="tensorflow"', 1)[1].split("</details>", 1)[0]
    assert "plain-containers-unregistered" in torch_to_tf and "adam-shared-step-counter" in torch_to_tf
    for target in re.findall(r'href="#([^"]+)"', torch_to_tf):
        assert f'id="{target}"' in dom, target  # every "shows in" link lands on a matrix row
