"""Hostile inputs to the report: links that are not web links, results filed under the wrong name.
The report warns in one line and still builds."""
import contextlib
import html
import io
import re
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

import pytest

from conformance import results
from conformance.report import build, safe_href
from conftest import INSTANCES, env, record

TEMPLATE = Path(__file__).parents[2] / "conformance" / "templates" / "report.html"
NOT_WEB = [" JaVa\tscript:alert(1)", "javascript:alert(1)", "JAVASCRIPT:alert(1)", "java\nscript:alert(1)",
           "\x01javascript:alert(1)", "vbscript:msgbox(1)", "data:text/html,<script>alert(1)</script>",
           "file:///etc/passwd", "//evil.example/x", "https://", "http:evil.example", "https://[::1", "ref"]
WEB = ["https://example.org/ok", " http://example.org/spaced\t", "HTTPS://Example.org/upper"]


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
    extra = results.CaseRecord(id="x-extra", base_id="x-extra", topic="extra", title="t", references=list(references),
                               axes={}, source="s", verdict="divergence", reason="r", duration_s=0.0,
                               documented=results.Documented(reason="why", link=link))
    results.write(results.Results(complete=True, environment=env(claims or framework),
                                  cases=[record(i) for i in INSTANCES[:3]] + [extra]), folder / f"{framework}.json")


def build_quietly(*args, **kw):
    """build() with its stderr captured: (page text, warning lines)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        page = build(*args, **kw).read_text(encoding="utf-8")
    return page, err.getvalue().splitlines()


# ---------------------------------------------------------------- links (issue 9)

@pytest.mark.parametrize("target", NOT_WEB)
def test_safe_href_refuses_what_is_not_a_web_link(target):
    assert safe_href(target) is None


@pytest.mark.parametrize("target", WEB)
def test_safe_href_keeps_web_links(target):
    assert urlsplit(safe_href(target)).scheme in ("http", "https")


def test_template_has_one_href_and_it_goes_through_safe_href():
    template = TEMPLATE.read_text()
    assert re.findall(r'href="[^"]*"', template) == ['href="{{ href }}"']
    assert "{% set href = target|safe_href(anchor) %}" in template


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
    status = dict(re.findall(r'data-framework="(\w+)">.*?<td class="status">([a-z ]+)', page, re.S))
    assert status["torch"].strip() == status["tensorflow"].strip() == "wrong framework"
    warnings = page.split('id="warnings"', 1)[-1].split("</div>", 1)[0]
    assert "torch.json: environment.framework is &#39;paddle&#39;" in warnings
    assert "tensorflow.json: environment.framework is &#39;jax&#39;" in warnings
    assert len(err) == 2 and all(line.startswith("warning: ") for line in err)
    assert 'class="cell v-documented"' not in page  # torch.json's divergence shown under no column
    assert len((tmp_path / "summary.csv").read_text().strip().splitlines()) == 1  # the header only
