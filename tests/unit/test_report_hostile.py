"""Hostile inputs to the report: links that are not web links, results filed under the wrong name,
malformed asv results, file names that are not UTF-8 and an unwritable --out. The report warns in
one line and still builds."""
import contextlib
import html
import io
import json
import math
import os
import re
import tempfile
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import results
from conformance.__main__ import main
from conformance.report.bench import load_benchmarks
from conformance.report.page import build, safe_href
from conftest import INSTANCES, env, record, write_asv

TEMPLATE = Path(__file__).parents[2] / "conformance" / "report" / "templates" / "report.html"
NOT_WEB = [" JaVa\tscript:alert(1)", "javascript:alert(1)", "JAVASCRIPT:alert(1)", "java\nscript:alert(1)",
           "\x01javascript:alert(1)", "vbscript:msgbox(1)", "data:text/html,<script>alert(1)</script>",
           "file:///etc/passwd", "//evil.example/x", "https://", "http:evil.example", "https://[::1", "ref"]
WEB = ["https://example.org/ok", " http://example.org/spaced\t", "HTTPS://Example.org/upper"]
GOOD_ASV = [1.0, 1.0, 0.2, 0.9, 1.0, 1.0, 1.0, 1.0] + [None] * 8


def hrefs(page):
    return [html.unescape(h) for h in re.findall(r'href="([^"]*)"', page)]


def assert_links_safe(page):
    """Every href is an in-page anchor, a ./ path beside the page, or http(s) with a host."""
    for href in hrefs(page):
        if href.startswith("./"):
            assert ":" not in href, href
        elif not href.startswith("#"):
            parts = urlsplit(href)
            assert parts.scheme in ("http", "https") and parts.hostname, href


def write_results(folder, framework, references=(), link="https://example.org/doc", claims=None):
    """Three spec cases and one the spec lacks (so its references come from the file), documented by link."""
    variant = results.VariantRecord(name="bn-running-var-biased", reason="why", link=link,
                                    snippet=f"conformance/runners/{framework}/confirm/s.py")
    extra = results.CaseRecord(id="x-extra", base_id="x-extra", topic="extra", title="t", references=list(references),
                               axes={}, source="s", verdict="divergence", reason="r", duration_s=0.0,
                               documented=results.Explanation(variants=[variant]))
    results.write(results.Results(complete=True, environment=env(claims or framework), profile=[variant],
                                  cases=[record(i) for i in INSTANCES[:3]] + [extra]), folder / f"{framework}.json")


def build_quietly(*args, **kw):
    """build() with its stderr captured: (page text, warning lines)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        page = build(*args, **kw).read_text(encoding="utf-8")
    return page, err.getvalue().splitlines()


# ---------------------------------------------------------------- links

@pytest.mark.parametrize("target", NOT_WEB)
def test_safe_href_refuses_what_is_not_a_web_link(target):
    assert safe_href(target) is None


@pytest.mark.parametrize("target", WEB)
def test_safe_href_keeps_web_links(target):
    assert urlsplit(safe_href(target)).scheme in ("http", "https")


def test_every_href_of_the_templates_goes_through_safe_href_or_names_a_page_of_the_site():
    """A link from results text goes through the `link` macro (safe_href); the site's own links join
    fixed paths, page names made of plain characters (site.page_name) and url-encoded ids (case_pages
    holds both, joined by site.publish)."""
    internal = r"(\{\{ root \}\})?[a-z/._]*(\{\{ (\w*pages\[[\w.]+\]|\w+\.page) \}\})?(#\{\{ (\w+\.)?id\|urlencode \}\})?"
    for template in TEMPLATE.parent.glob("*.html"):
        for href in re.findall(r'href="([^"]*)"', template.read_text()):
            assert href == "{{ href }}" or re.fullmatch(internal, href), (template.name, href)
    assert "{% set href = target|safe_href(anchor) %}" in (TEMPLATE.parent / "_macros.html").read_text()


def test_only_web_links_are_live(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    write_results(folder, "torch", references=NOT_WEB + WEB, link=NOT_WEB[0])
    write_results(folder, "paddle", link=WEB[0])
    page, _ = build_quietly(folder, tmp_path, bench_dir=None)
    live = hrefs(page)
    assert "alert(1)" not in " ".join(live)
    assert_links_safe(page)
    for target in WEB:
        assert safe_href(target) in live
    for target in NOT_WEB:  # shown, as text
        assert re.search(f'<span class="unlinked"[^>]*>{re.escape(target)}</span>', html.unescape(page)), target


def test_results_folder_named_like_a_scheme_links_to_its_files(tmp_path):
    folder = tmp_path / "javascript:alert(1)"
    folder.mkdir()
    write_results(folder, "torch")
    page, _ = build_quietly(folder, tmp_path, bench_dir=None)
    link = next(h for h in hrefs(page) if h.endswith("torch.json"))
    assert link == "./javascript%3Aalert%281%29/torch.json"
    assert_links_safe(page)
    target = urljoin((tmp_path / "index.html").as_uri(), link)
    assert Path(url2pathname(unquote(urlsplit(target).path))) == folder / "torch.json"


def test_results_of_another_or_unknown_framework_are_flagged(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    write_results(folder, "torch", claims="paddle")
    write_results(folder, "tensorflow", claims="jax")
    page, err = build_quietly(folder, tmp_path, bench_dir=None)
    status = dict(re.findall(r'data-framework="(\w+)" data-run="[^"]*">.*?<td class="status">([a-z ]+)', page, re.S))
    assert status["torch"].strip() == status["tensorflow"].strip() == "wrong framework"
    warnings = page.split('id="warnings"', 1)[-1].split("</div>", 1)[0]
    assert "torch.json: environment.framework is &#39;paddle&#39;" in warnings
    assert "tensorflow.json: environment.framework is &#39;jax&#39;" in warnings
    assert len(err) == 2 and all(line.startswith("warning: ") for line in err)
    assert 'class="cell v-documented"' not in page  # torch.json's divergence shown under no column
    assert len((tmp_path / "summary.csv").read_text().strip().splitlines()) == 1  # the header only


# ---------------------------------------------------------------- asv results, file names, --out

NAME = "benchmarks.MaskedUpdate.track_step_cost_relative"
PARAM_NAMES = ["framework", "mask", "fraction", "optimizer"]
PARAMS = [["'torch'"], ["'frozen'"], ["0.0", "0.9"], ["'sgd_wd'"]]


def asv_file(values, params=PARAMS, **top):
    return json.dumps({"result_columns": ["result", "params"], "date": 2, "env_name": "x",
                       "results": {NAME: [values, params]}, **top})


BAD_ASV = [  # (file under machine2/, its text, what the warning says, whether the good file still plots)
    ("bad.json", "{", "not JSON (line 1)", True),
    ("bad.json", b"\xff\xfe{}", "not UTF-8", True),
    ("bad.json", "[1, 2]", "expected an object, found a list", True),
    ("bad.json", '{"results": {}}', "not asv results", True),
    ("bad.json", json.dumps({"result_columns": ["result"], "results": {NAME: {"result": 1}}}),
     "expected a list, found an object", True),
    ("bad.json", asv_file([float("inf"), 0.5]), "value inf is not a finite number", True),
    ("bad.json", asv_file(["fast", 0.5]), "value 'fast' is not a finite number", True),
    ("bad.json", asv_file([0.5]), "one value per parameter combination", True),
    ("bad.json", asv_file([0.5, 0.5], params=[["'torch'"], ["'frozen'"], ["'half'", "0.9"], ["'sgd_wd'"]]),
     "fraction 'half' is not a number in [0, 1]", True),
    ("bad.json", asv_file([0.5, 0.5], params=[[1], ["'frozen'"], ["0.0", "0.9"], ["'sgd_wd'"]]),
     "params is not a list of lists of strings", True),
    ("bad.json", asv_file([0.5, 1e300]), "relative cost 1e+300 is outside", True),
    ("bad.json", asv_file([0.5, 0.5], params=[["'$x^$'"], ["'frozen'"], ["0.0", "0.9"], ["'sgd_wd'"]]),
     "is not a name", True),
    ("bad.json", asv_file([0.5, 0.5], date="yesterday"), "date 'yesterday' is not a number", True),
    ("../benchmarks.json", "{", "not JSON (line 1)", False),
    ("../benchmarks.json", "[]", "expected an object, found a list", False),
    ("../benchmarks.json", json.dumps({NAME: {"param_names": "framework"}}), "no list of its parameter names",
     False),
]


@pytest.mark.parametrize("name, text, says, plotted", BAD_ASV, ids=[c[2] for c in BAD_ASV])
def test_malformed_asv_results_warn_in_one_line(tmp_path, report_dir, name, text, says, plotted):
    bench = tmp_path / "asv"
    bench.mkdir()
    write_asv(bench, GOOD_ASV)
    bad = bench / "machine2" / name
    (bench / "machine2").mkdir()
    bad.write_bytes(text if isinstance(text, bytes) else text.encode())
    page, err = build_quietly(report_dir / "results", report_dir, bench_dir=bench)
    mine = [line for line in err if str(bench) in line]
    assert len(mine) == 1 and mine[0].startswith(f"warning: {bench}") and says in mine[0], err
    assert mine[0] in html.unescape(page)  # on the page too
    assert ('id="bench-plot"' in page) == plotted and ('id="bench-missing"' in page) != plotted
    if plotted:  # the good points of the bad file are kept, the bad ones left out
        frame = load_benchmarks(bench, warn=lambda message: None)
        assert frame.value.map(lambda v: 0 <= v <= 1).all()


def test_many_mask_kinds_and_frameworks_still_plot(tmp_path, report_dir):
    bench = tmp_path / "asv"
    (bench / "m").mkdir(parents=True)
    params = [[f"'fw{n}'" for n in range(12)], [f"'mask{n}'" for n in range(200)], ["0.5"], ["'sgd_wd'"]]
    (bench / "benchmarks.json").write_text(json.dumps({NAME: {"param_names": PARAM_NAMES}}))
    (bench / "m" / "r.json").write_text(asv_file([0.5] * 12 * 200, params=params))
    page, err = build_quietly(report_dir / "results", report_dir, bench_dir=bench)
    assert 'id="bench-plot"' in page and not [line for line in err if str(bench) in line]


def test_file_names_that_are_not_utf8_still_make_a_page(tmp_path):
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/res\xff"))
    folder.mkdir()
    write_results(folder, "torch")
    machine = Path(os.fsdecode(os.fsencode(tmp_path) + b"/asv/m\xfe"))
    machine.mkdir(parents=True)
    (tmp_path / "asv" / "benchmarks.json").write_text("{}")
    (machine / "r.json").write_text("{")
    page, err = build_quietly(folder, tmp_path, bench_dir=tmp_path / "asv")
    assert "./res%FF/torch.json" in hrefs(page)  # the name's own byte
    assert "m\\udcfe/r.json: not JSON (line 1)" in page  # the warning, its odd byte spelled out


def test_unwritable_out_is_one_line_and_exit_2(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    (tmp_path / "dir" / "index.html").mkdir(parents=True)
    for out, says in ((blocker, "exists and is not a folder"), (blocker / "sub", "Not a directory"),
                      (tmp_path / "dir", "index.html: Is a directory")):
        code = main(["report", "--results", str(tmp_path / "none"), "--bench", str(tmp_path / "none"),
                     "--out", str(out)])
        err = capsys.readouterr().err.splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith(f"error: report --out {out}: "), err
        assert says in err[0]


# ---------------------------------------------------------------- random junk never breaks the page

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                 max_size=4), max_leaves=12)


def mostly(good, bad):
    """Draws from `good` three times in four, else from `bad`: most examples get past the first check."""
    return st.sampled_from([good, good, good, bad]).flatmap(lambda strategy: strategy)


# Parameter values (asv stores their repr) of framework, mask, fraction and optimizer: good ones, or
# bad TeX and a lone surrogate (matplotlib fails on both), markup, non-numbers.
POOLS = [(["'torch'", "'paddle'"], ["'$x^$'", "'\ud800'", "'<b>x</b>'", "1"]), (["'frozen'", "'unused'"], ["'$x^$'"]),
         (["0.0", "0.9", "1"], ["nan", "1e999", "'half'", "[1]"]), (["'sgd_wd'", "'adamw'"], ["", "'a b'"])]
PARAM_LISTS = st.tuples(*(st.lists(mostly(st.sampled_from(good), st.sampled_from(bad)), min_size=1, max_size=3)
                      for good, bad in POOLS))
VALUE = mostly(st.floats(0, 2), st.one_of(st.none(), st.floats(), st.integers(), st.text(max_size=3)))
ROW = PARAM_LISTS.flatmap(
    lambda params: st.lists(VALUE, min_size=math.prod(map(len, params)), max_size=math.prod(map(len, params)))
    .map(lambda values: [values, list(params)]))
ASV = mostly(  # well-formed with odd values, or junk at any level
    st.fixed_dictionaries({"result_columns": st.just(["result", "params"]), "date": st.integers(),
                           "results": st.fixed_dictionaries({NAME: ROW}, optional={"b.M.time_x": ROW})}),
    st.one_of(JSON, st.fixed_dictionaries({
        "result_columns": st.one_of(st.just(["result", "params"]), JSON), "date": st.one_of(st.floats(), JSON),
        "results": st.one_of(JSON, st.dictionaries(st.sampled_from([NAME, "b.M.time_x"]), st.one_of(ROW, JSON),
                                                   max_size=2))})))
META = mostly(st.just({NAME: {"param_names": PARAM_NAMES}}), JSON)
ASV_FILE = mostly(ASV.map(json.dumps), st.binary(max_size=20))
TEXT = st.one_of(st.text(max_size=20), st.sampled_from(NOT_WEB + WEB))
RECORD = st.fixed_dictionaries({
    "id": TEXT, "base_id": TEXT, "topic": TEXT, "title": TEXT, "references": st.lists(TEXT, max_size=3),
    "axes": st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2), "source": TEXT,
    "verdict": st.sampled_from(["conform", "divergence", "error", "unsupported"]), "reason": st.none() | TEXT,
    "documented": st.none() | st.fixed_dictionaries({"reason": TEXT, "link": TEXT}), "duration_s": st.floats()})
RESULTS = st.one_of(JSON, st.fixed_dictionaries({
    "schema_version": st.just(1), "complete": st.booleans(),
    "environment": st.fixed_dictionaries({k: TEXT for k in results.Environment.model_fields if k != "finished"}
                                         | {"framework": st.sampled_from(["torch", "paddle", "jax", ""])}),
    "cases": st.lists(RECORD, max_size=4)}))
JUNK = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def never_breaks(results_dir, bench_dir):
    with tempfile.TemporaryDirectory() as out:
        page, err = build_quietly(results_dir, Path(out), bench_dir=bench_dir)
        assert (Path(out) / "summary.csv").exists() and "</html>" in page
    assert all(line.startswith("warning: ") for line in err), err  # one line each: no traceback
    assert_links_safe(page)


@JUNK
@given(meta=META, files=st.lists(ASV_FILE, min_size=1, max_size=3))
def test_junk_asv_results_never_break_the_report(meta, files):
    with tempfile.TemporaryDirectory() as tmp:
        bench = Path(tmp)
        (bench / "benchmarks.json").write_text(json.dumps(meta))
        (bench / "m").mkdir()
        for n, data in enumerate(files):
            (bench / "m" / f"{n}.json").write_bytes(data if isinstance(data, bytes) else data.encode())
        never_breaks(bench / "no-results", bench)


@JUNK
@given(files=st.dictionaries(st.sampled_from(["torch", "paddle"]),
                             st.one_of(RESULTS.map(lambda d: json.dumps(d).encode()), st.binary(max_size=20)),
                             max_size=2))
def test_junk_results_never_break_the_report(files):
    with tempfile.TemporaryDirectory() as tmp:
        for framework, data in files.items():
            (Path(tmp) / f"{framework}.json").write_bytes(data)
        never_breaks(Path(tmp), None)


def test_asv_skipped_combinations_are_no_problem(tmp_path, report_dir):
    """asv stores NaN for a combination whose setup skipped it (another framework's env): not a warning."""
    bench = tmp_path / "asv"
    bench.mkdir()
    write_asv(bench, GOOD_ASV[:2] + [float("nan")] * 14)
    page, err = build_quietly(report_dir / "results", report_dir, bench_dir=bench)
    assert not [line for line in err if str(bench) in line], err
    assert 'id="bench-plot"' in page


def test_a_name_with_line_breaks_stays_one_warning_line(tmp_path, report_dir):
    """A benchmark name read from a file may hold any line break str.splitlines knows."""
    bench = tmp_path / "asv"
    (bench / "m").mkdir(parents=True)
    (bench / "benchmarks.json").write_text(json.dumps({}))
    (bench / "m" / "0.json").write_text(json.dumps({"results": {"b.M.time\nx\u2028y\x85z": 1}, "date": 1,
                                                          "result_columns": ["result", "params"]}))
    _, err = build_quietly(report_dir / "results", report_dir, bench_dir=bench)
    assert err and all(line.startswith("warning: ") for line in err), err


def test_an_escape_sequence_in_a_name_reaches_the_console_escaped(tmp_path, report_dir):
    """A results file named with a terminal escape sequence: the warning shows it escaped, never raw."""
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    (results_dir / "torch\x1b[2J\x1b]0;owned\x07.json").write_text("{}")
    _, err = build_quietly(results_dir, tmp_path / "out", bench_dir=None)
    assert err and not any("\x1b" in line or "\x07" in line for line in err), err
    assert any("\\x1b[2J" in line for line in err), err
