"""The published site in headless Chromium, from file:// (as a static host serves it): the landing
page renders every run and stays small, and a case's permalink opens that case. Screenshots go to
reports/site-landing.png and reports/site-case.png (or $CONFORMANCE_SCREENSHOTS)."""
import os
import re
from pathlib import Path
from urllib.parse import quote

from conformance.report.site import publish
from conftest import INSTANCES, chromium

SHOTS = Path(os.environ.get("CONFORMANCE_SCREENSHOTS", "reports"))


def test_the_landing_page_renders_every_run_under_a_megabyte(report_dir, tmp_path):
    index = publish([report_dir / "results"], tmp_path / "site")
    assert index.stat().st_size < 1 << 20
    dom = chromium("--dump-dom", index.as_uri())
    assert re.findall(r'<tr class="run-row[^"]*" data-run="([^"]+)"', dom) == [
        "torch-2.13.0-cpu-eager-loop", "tensorflow-2.21.0-cpu-eager-loop"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    chromium("--window-size=1400,900", f"--screenshot={(SHOTS / 'site-landing.png').resolve()}", index.as_uri())
    assert (SHOTS / "site-landing.png").stat().st_size > 0


def test_a_case_permalink_opens_that_case(report_dir, tmp_path):
    site = tmp_path / "site"
    publish([report_dir / "results"], site)
    inst = next(i for i in INSTANCES if "[" in i.id)
    url = (site / "cases" / f"{inst.case.id}.html").as_uri() + "#" + quote(inst.id)
    dom = chromium("--dump-dom", url)  # the fragment names the instance's heading, as the browser parsed it
    assert f'<h2 id="{inst.id}">{inst.id}</h2>' in dom and f"<h1 id=\"case\">{inst.case.id}</h1>" in dom
    SHOTS.mkdir(parents=True, exist_ok=True)
    chromium("--window-size=1400,900", f"--screenshot={(SHOTS / 'site-case.png').resolve()}", url)
    assert (SHOTS / "site-case.png").stat().st_size > 0


def test_from_one_run_to_another_shows_the_variants_that_differ(report_dir, tmp_path):
    site = tmp_path / "site"
    publish([report_dir / "results"], site)
    url = (site / "porting.html").as_uri() + "#from=torch-2.13.0-cpu-eager-loop&to=tensorflow-2.21.0-cpu-eager-loop"
    dom = chromium("--dump-dom", url)
    assert re.findall(r'<tr class="porting-row" data-variant="([^"]+)"', dom) == [
        "plain-containers-unregistered", "adam-shared-step-counter"]
    assert "2 variant(s) differ" in dom and "https://example.org/doc" in dom
    SHOTS.mkdir(parents=True, exist_ok=True)
    chromium("--window-size=1400,900", f"--screenshot={(SHOTS / 'site-porting.png').resolve()}", url)
    dom = chromium("--dump-dom", (site / "porting.html").as_uri() + "#from=torch-9.9-cpu-eager-loop")
    assert "from=torch-9.9-cpu-eager-loop: no such run in this site; showing the first runs instead." in dom


def test_the_case_table_filters_change_the_rows_shown(report_dir, tmp_path):
    site = tmp_path / "site"
    publish([report_dir / "results"], site)
    page = (site / "cases" / "index.html").as_uri()
    shown = lambda dom: re.findall(r'<tr class="case-row" data-case="([^"]+)"[^>]*?(?<! hidden="")>', dom)
    everything = shown(chromium("--dump-dom", page))
    assert everything == [i.id for i in INSTANCES]
    # the fixture's torch run: INSTANCES[0] documented, [3] undocumented; tensorflow: [4] explained
    assert shown(chromium("--dump-dom", page + "#framework=torch&outcome=divergence")) == [INSTANCES[3].id]
    assert shown(chromium("--dump-dom", page + "#variant=adam-shared-step-counter")) == [INSTANCES[4].id]
    topic = INSTANCES[0].topic
    assert shown(chromium("--dump-dom", page + f"#topic={topic}")) == [i.id for i in INSTANCES if i.topic == topic]
