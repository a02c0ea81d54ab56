"""The site the main job published (`tox -e report` runs this last), read in headless Chromium from
file://: every internal link resolves in the DOM Chromium built, "from X to Y" lists the variants that
the two runs' own results files say differ, a case permalink opens its case, the filters change the rows,
and the landing page weighs under 1 MB. Screenshots of the landing page, "from X to Y" and a case page go
to $CONFORMANCE_SCREENSHOTS (default reports/site-screenshots; README's are docs/img/).

    CONFORMANCE_SITE=reports/site pytest tests/site        (the default site; publish it first)
"""
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from packaging.version import Version

from conftest import chromium

SITE = Path(os.environ.get("CONFORMANCE_SITE", "reports/site")).resolve()
SHOTS = Path(os.environ.get("CONFORMANCE_SCREENSHOTS", "reports/site-screenshots")).resolve()
# from the newest paddle to the newest torch (3.3.1 -> 2.13.0 today), and from the oldest MindSpore to
# the newest (2.7.2 -> 2.10.0): a port across frameworks, and an upgrade
PAIRS = [(("paddle", max), ("torch", max)), (("mindspore", min), ("mindspore", max))]


@pytest.fixture(scope="module")
def site():
    assert (SITE / "index.html").is_file(), f"no site at {SITE}: run `python -m conformance publish` first"
    return SITE


@pytest.fixture(scope="module")
def index(site):
    return json.loads((site / "data" / "index.json").read_text())["results"]


class Dom(HTMLParser):
    """The links and ids of a page as Chromium built it (scripts run, so porting.html's rows count)."""

    def __init__(self, text):
        super().__init__()
        self.links, self.ids = [], set()
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name) and not (tag == "img" and attrs[name].startswith("data:")):
                self.links.append(attrs[name])


def shoot(name, url, height=900):
    SHOTS.mkdir(parents=True, exist_ok=True)
    chromium(f"--window-size=1400,{height}", f"--screenshot={SHOTS / name}", url)
    assert (SHOTS / name).stat().st_size > 0


def eager_loop(index, framework, which):
    """The cpu eager loop run of the newest (which=max) or oldest (min) version of a framework, as
    data/index.json names it."""
    mine = [r for r in index if (r["framework"], r["device"], r["mode"], r["api"]) == (framework, "cpu", "eager", "loop")]
    assert mine, f"the site has no cpu eager loop run of {framework}"
    return which(mine, key=lambda r: Version(r["version"]))


def test_every_internal_link_resolves_in_chromium(site):
    pages = [p for p in site.rglob("*.html") if "asv" not in p.relative_to(site).parts]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        doms = dict(zip(pages, pool.map(lambda p: Dom(chromium("--dump-dom", p.as_uri())), pages)))
    checked, broken = 0, []
    for page, dom in doms.items():
        for link in dom.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue  # upstream pages, not the site's
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            checked += 1
            if site not in target.parents and target != site or not target.exists():
                broken.append(f"{page.relative_to(site)} -> {link}")
            elif parts.fragment and target in doms and unquote(parts.fragment) not in doms[target].ids:
                broken.append(f"{page.relative_to(site)} -> {link} (no such anchor)")
    assert not broken, f"{len(broken)} of {checked} links broken: {broken[:10]}"
    assert checked > len(pages)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: "{}-{}-to-{}-{}".format(p[0][0], p[0][1].__name__, p[1][0], p[1][1].__name__))
def test_from_x_to_y_lists_the_variants_the_two_runs_results_say_differ(site, index, pair):
    ours, theirs = eager_loop(index, *pair[0]), eager_loop(index, *pair[1])
    profile = lambda entry: {v["name"] for v in json.loads((site / entry["file"]).read_text())["profile"]}
    expected = profile(ours) ^ profile(theirs)
    key = lambda entry: Path(entry["file"]).stem
    url = (site / "porting.html").as_uri() + f"#from={key(ours)}&to={key(theirs)}"  # as a user types it
    dom = chromium("--dump-dom", url)
    assert f'id="from-head">in {ours["framework"]} {ours["version"]}</th>' in dom
    assert f'id="to-head">in {theirs["framework"]} {theirs["version"]}</th>' in dom
    shown = re.findall(r'<tr class="porting-row" data-variant="([^"]+)"', dom)
    assert sorted(shown) == sorted(expected)
    assert (f"{len(expected)} variant(s) differ" if expected else "No variant differs") in dom
    if pair == PAIRS[0]:
        assert expected, "paddle 3.3.1 and torch 2.13.0 share their profile: the view shows nothing to check"
        shoot("site-porting.png", url, height=1100)


def test_a_case_permalink_opens_that_case(site, index):
    cases = json.loads((site / index[0]["file"]).read_text())["cases"]
    case = next(c for c in cases if c["id"] != c["base_id"])  # an instance of a case with several
    page = next(p for p in (site / "cases").glob("*.html") if f'<h1 id="case">{case["base_id"]}</h1>' in p.read_text())
    url = page.as_uri() + "#" + case["id"]
    dom = chromium("--dump-dom", url)
    assert f'<h2 id="{case["id"]}">' in dom
    shoot("site-case.png", url)


def test_the_filters_change_the_rows_shown(site):
    page = (site / "cases" / "index.html").as_uri()
    shown = lambda dom: re.findall(r'<tr class="case-row" data-case="([^"]+)"[^>]*?(?<! hidden="")>', dom)
    everything = shown(chromium("--dump-dom", page))
    for fragment in ("framework=paddle&outcome=documented", "topic=seeds", "variant=plain-containers-unregistered"):
        some = shown(chromium("--dump-dom", page + "#" + fragment))
        assert 0 < len(some) < len(everything) and set(some) <= set(everything), fragment


def test_the_landing_page_lists_every_run_first_and_weighs_under_a_megabyte(site, index):
    landing = site / "index.html"
    assert landing.stat().st_size < 1 << 20
    dom = chromium("--dump-dom", landing.as_uri())
    assert sorted(re.findall(r'<tr class="run-row[^"]*" data-run="([^"]+)"', dom)) == \
        sorted(Path(r["file"]).stem for r in index)
    seeds = dict.fromkeys(c["base_id"] for c in json.loads((site / index[0]["file"]).read_text())["cases"]
                          if c["topic"] == "seeds")
    header = dom.split('id="runs"', 1)[1].split("</tr>", 1)[0]  # the first table: the seeds, then counts
    assert re.findall(r'<th title="[^"]*"><a href="cases/[^"]+">([^<]+)</a></th>', header) == list(seeds)
    assert {re.match(r"seed-(\d)-", seed).group(1) for seed in seeds} == set("12345")  # all five reports
    shoot("site-landing.png", landing.as_uri(), height=1100)
