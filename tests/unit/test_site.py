"""`publish`: the static site from synthetic results (no framework needed)."""
import os
import hashlib
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from conformance import results
from conformance.__main__ import main
from conformance.report.site import publish
from conftest import INSTANCES, env, record

SEED = next(i for i in INSTANCES if i.topic == "seeds")


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])


def parsed(path):
    links = Links()
    links.feed(path.read_text())
    return links


def test_every_internal_link_of_the_site_resolves(report_dir, tmp_path):
    site = tmp_path / "site"
    publish([report_dir / "results"], site)
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 10
    checked = 0
    for page in pages:
        for href in parsed(page).hrefs:
            parts = urlsplit(href)
            if parts.scheme:
                assert parts.scheme in ("http", "https"), href
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            assert target.is_file(), f"{page.relative_to(site)}: {href}"
            if parts.fragment and target.suffix == ".html":
                assert unquote(parts.fragment) in parsed(target).ids, f"{page.relative_to(site)}: {href}"
            checked += 1
    assert checked > 100


def test_the_landing_page_puts_the_seeds_and_every_axis_of_every_run_first(report_dir, tmp_path):
    folder = report_dir / "results"
    graph = env("torch", "2.13.0").model_copy(update=dict(mode="graph", backend="inductor"))
    results.write(results.Results(complete=True, environment=graph, cases=[record(i) for i in INSTANCES]),
                  folder / "torch-graph.json")
    index = publish([folder], tmp_path / "site").read_text()
    runs = re.findall(r'<tr class="run-row[^"]*" data-run="([^"]+)"', index)
    assert runs == ["torch-2.13.0-cpu-eager-loop", "torch-2.13.0-cpu-graph+inductor-loop",
                    "tensorflow-2.21.0-cpu-eager-loop"]
    row = index.split('data-run="torch-2.13.0-cpu-graph+inductor-loop"', 1)[1].split("</tr>", 1)[0]
    assert "<td>inductor</td>" in row and "<td>graph</td>" in row
    assert index.index('id="runs"') < index.index(SEED.case.id) < index.index("conform %")
    assert "Suite abc" in index and "newest run 2026-01-01" in index


def test_a_run_mostly_of_errors_is_flagged(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    cases = [record(i, "error" if n % 2 else "conform", reason="harness fell over") for n, i in enumerate(INSTANCES)]
    results.write(results.Results(complete=True, environment=env("paddle", "2.6.2"), cases=cases), folder / "p.json")
    index = publish([folder], tmp_path / "site").read_text()
    assert 'class="run-row flagged"' in index and "mostly errors" in index


def test_a_case_page_holds_its_source_its_observations_the_snippet_and_the_repro_line(report_dir, tmp_path):
    site = tmp_path / "site"
    publish([report_dir / "results"], site)
    first = INSTANCES[0]
    page = (site / "cases" / f"{first.case.id}.html").read_text()
    assert f"- id: {first.case.id}" in page  # the YAML as the spec writes it
    assert "value x @ step 1" in page and "changed by max 1e-3" in page
    assert "plain-containers-unregistered" in page and "def one_step(kind):" in page  # the snippet's source
    assert f"python -m conformance repro &#39;{first.id}&#39; --framework torch" in page
    assert "&lt;script&gt;" in page and "<script>alert" not in page


def test_the_data_index_names_each_file_with_its_axes_and_hash(report_dir, tmp_path):
    site = tmp_path / "site"
    publish([report_dir / "results"], site)
    index = json.loads((site / "data" / "index.json").read_text())
    files = {entry["file"]: entry for entry in index["results"]}
    assert set(files) == {"data/results/torch-2.13.0-cpu-eager-loop.json", "data/results/tensorflow-2.21.0-cpu-eager-loop.json"}
    entry = files["data/results/torch-2.13.0-cpu-eager-loop.json"]
    assert (entry["framework"], entry["version"], entry["device"], entry["mode"], entry["api"], entry["backend"]) == \
        ("torch", "2.13.0", "cpu", "eager", "loop", "")
    assert entry["sha256"] == hashlib.sha256((site / entry["file"]).read_bytes()).hexdigest()
    assert entry["complete"] and not files["data/results/tensorflow-2.21.0-cpu-eager-loop.json"]["complete"]
    assert (site / "data" / "summary.csv").read_text().startswith("run,framework")


def test_publish_with_a_missing_folder_writes_the_others_then_fails_naming_it(report_dir, tmp_path, capsys):
    site = tmp_path / "site"
    code = main(["publish", "--results", str(report_dir / "results"), str(tmp_path / "nowhere"), "--out", str(site)])
    err = capsys.readouterr().err
    assert code == 2 and f"publish --results {tmp_path / 'nowhere'}: no such folder" in err
    assert (site / "index.html").is_file()


def test_publish_into_a_file_is_refused_in_one_line(report_dir, tmp_path, capsys):
    blocker = tmp_path / "site"
    blocker.write_text("not a folder")
    assert main(["publish", "--results", str(report_dir / "results"), "--out", str(blocker)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert errors == [f"error: publish --out {blocker}: a path in it exists and is not a folder"]
    assert blocker.read_text() == "not a folder"


def test_a_case_id_is_never_a_path(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    odd = record(INSTANCES[0]).model_copy(update=dict(id="../../evil[x]", base_id="../../evil"))
    results.write(results.Results(complete=True, environment=env("torch", "2.13.0"), cases=[odd]), folder / "t.json")
    site = tmp_path / "site"
    publish([folder], site)
    assert not (tmp_path / "evil.html").exists() and (site / "cases" / "______evil.html").is_file()
    assert all(Path(p).resolve().is_relative_to(site.resolve()) for p in site.rglob("*"))


def test_the_porting_data_compares_profiles_and_its_case_links_resolve(report_dir, tmp_path):
    site = tmp_path / "site"
    publish([report_dir / "results"], site)
    page = (site / "porting.html").read_text()
    raw = page.split('<script type="application/json" id="porting-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in raw  # nothing in the data can close its element
    data = json.loads(raw)
    assert data["runs"]["torch-2.13.0-cpu-eager-loop"]["variants"] == ["plain-containers-unregistered"]
    assert data["runs"]["tensorflow-2.21.0-cpu-eager-loop"]["variants"] == ["adam-shared-step-counter"]
    entry = data["variants"]["plain-containers-unregistered"]["runs"]["torch-2.13.0-cpu-eager-loop"]
    assert entry["link"] == "https://example.org/doc" and [i for i, _ in entry["cases"]] == [INSTANCES[0].id]
    for variant in data["variants"].values():
        for run in variant["runs"].values():
            for case_id, href in run["cases"]:
                path, _, fragment = href.partition("#")
                assert unquote(fragment) in parsed(site / path).ids


def test_each_variant_no_upstream_page_states_gets_an_entry_a_maintainer_can_act_on(report_dir, tmp_path):
    site = tmp_path / "site"
    publish([report_dir / "results"], site)
    page = (site / "upstream.html").read_text()
    entries = re.findall(r'<h2 id="([^"]+)">', page)
    assert entries == ["tensorflow-adam-shared-step-counter"]  # torch's variant cites a page: not listed
    assert "Holds in: <span class=\"run\">tensorflow 2.21.0</span>" in page
    snippet = Path("conformance/runners/tensorflow/confirm/adam_shared_step_counter.py").read_text()
    assert snippet.splitlines()[2] in html.unescape(page)  # the snippet's own text
    assert f'href="cases/{INSTANCES[4].case.id}.html#' in page and "resumes late" not in page.split("<h2", 1)[0]


def test_publishing_twice_with_history_shows_the_second_runs_changes_against_the_first(tmp_path, capsys):
    folder = tmp_path / "results"
    folder.mkdir()
    site = tmp_path / "site"
    first = [record(i) for i in INSTANCES]
    results.write(results.Results(complete=True, environment=env("torch", "2.13.0"), cases=first), folder / "t.json")
    assert main(["publish", "--results", str(folder), "--out", str(site), "--history", str(site)]) == 0
    assert "no history yet" in capsys.readouterr().err  # the first publish starts one
    assert 'id="changed"' not in (site / "index.html").read_text()
    assert "no history yet" not in (site / "index.html").read_text()  # a first publish is no warning
    second = [record(i) for i in INSTANCES]
    second[2] = record(INSTANCES[2], "divergence", reason="now diverges")
    results.write(results.Results(complete=True, environment=env("torch", "2.13.0"), cases=second), folder / "t.json")
    assert main(["publish", "--results", str(folder), "--out", str(site), "--history", str(site)]) == 0
    index = (site / "index.html").read_text()
    changed = index.split('id="changed"', 1)[1].split("</table>", 1)[0]
    assert re.findall(r'<tr data-case="([^"]+)"', changed) == [INSTANCES[2].id]
    assert "<td>conform</td><td>divergence</td>" in changed
    history = json.loads((site / "data" / "history.json").read_text())
    assert len(history["snapshots"]) == 2
    page = (site / "cases" / f"{INSTANCES[2].case.id}.html").read_text()
    assert "Across publishes" in page and page.count("torch-2.13.0-cpu-eager-loop</td>") >= 2


def test_history_follows_a_case_across_a_framework_release(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    site = tmp_path / "site"
    results.write(results.Results(complete=True, environment=env("torch", "2.12.0"),
                                  cases=[record(i) for i in INSTANCES]), folder / "t.json")
    publish([folder], site, history_site=tmp_path / "empty")
    second = [record(i) for i in INSTANCES]
    second[2] = record(INSTANCES[2], "divergence", reason="changed with the release")
    results.write(results.Results(complete=True, environment=env("torch", "2.13.0"), cases=second), folder / "t.json")
    publish([folder], site, history_site=site)
    changed = (site / "index.html").read_text().split('id="changed"', 1)[1].split("</table>", 1)[0]
    assert re.findall(r'<tr data-case="([^"]+)"', changed) == [INSTANCES[2].id]  # the others held across it
    assert "torch-2.13.0-cpu-eager-loop <span class=\"meta\">(then torch-2.12.0-cpu-eager-loop)" in changed
    def timeline_of(inst):
        page = (site / "cases" / f"{inst.case.id}.html").read_text()
        return page.split(f'<h2 id="{inst.id}">', 1)[1].split("<h2 ", 1)[0].split('class="timeline"', 1)[1]

    timeline = timeline_of(INSTANCES[2])
    rows = re.findall(r"<tr( class=\"flag\")?><td>[^<]*</td><td>[^<]*</td><td>(torch-[^ <]+)", timeline)
    assert rows == [("", "torch-2.12.0-cpu-eager-loop"), (' class="flag"', "torch-2.13.0-cpu-eager-loop")]
    assert "(replaced torch-2.12.0-cpu-eager-loop)" in timeline
    assert "torch-2.13.0-cpu-eager-loop" in timeline_of(INSTANCES[0]) and ' class="flag"' not in timeline_of(INSTANCES[0])


def test_a_history_that_is_not_one_starts_anew_and_a_missing_site_is_refused(tmp_path, capsys):
    folder = tmp_path / "results"
    folder.mkdir()
    results.write(results.Results(complete=True, environment=env("torch", "2.13.0"), cases=[record(INSTANCES[0])]),
                  folder / "t.json")
    old = tmp_path / "old"
    (old / "data").mkdir(parents=True)
    (old / "data" / "history.json").write_text('{"snapshots": [{"published": 1e999}]}')
    assert main(["publish", "--results", str(folder), "--out", str(tmp_path / "site"), "--history", str(old)]) == 0
    assert f"--history {old}: {old / 'data' / 'history.json'} is not a history of this suite" in capsys.readouterr().err
    assert main(["publish", "--results", str(folder), "--out", str(tmp_path / "site"),
                 "--history", str(tmp_path / "nowhere")]) == 2
    assert "no such folder (name the site published before)" in capsys.readouterr().err


def test_a_framework_page_holds_its_profile_defaults_and_version_changes(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    variant = results.VariantRecord(name="plain-containers-unregistered", reason="because", link="https://example.org/a",
                                    snippet="conformance/runners/torch/confirm/plain_containers_unregistered.py")
    old = [record(i) for i in INSTANCES]
    new = [record(i) for i in INSTANCES]
    new[1] = record(INSTANCES[1], "divergence", reason="now", documented=results.Explanation(variants=[variant]))
    results.write(results.Results(complete=True, environment=env("torch", "2.11.0"), cases=old), folder / "a.json")
    results.write(results.Results(complete=True, environment=env("torch", "2.13.0"), cases=new, profile=[variant]),
                  folder / "b.json")
    site = tmp_path / "site"
    publish([folder], site)
    page = (site / "frameworks" / "torch.html").read_text()
    assert 'data-variant="plain-containers-unregistered"' in page and "needed by 1" in page
    versions = page.split('id="versions"', 1)[1].split("<h2", 1)[0]
    assert "2.11.0 → 2.13.0" in versions and re.findall(r'<tr data-case="([^"]+)"', versions) == [INSTANCES[1].id]
    assert f'href="../cases/{INSTANCES[1].case.id}.html#' in versions
    assert 'href="frameworks/torch.html"' in (site / "index.html").read_text()


def test_the_asv_site_is_published_under_the_same_root_and_linked(report_dir, tmp_path):
    asv = tmp_path / "asv"
    (asv / "graphs").mkdir(parents=True)
    (asv / "index.html").write_text("<html>asv</html>")
    (asv / "graphs" / "summary.json").write_text("{}")
    site = tmp_path / "site"
    publish([report_dir / "results"], site, asv_site=asv)
    assert (site / "asv" / "graphs" / "summary.json").is_file()
    assert 'href="asv/index.html"' in (site / "index.html").read_text()
    publish([report_dir / "results"], tmp_path / "bare", asv_site=tmp_path / "no-asv")
    assert "No asv site was published" in (tmp_path / "bare" / "index.html").read_text()


def test_a_link_inside_the_site_is_never_followed(report_dir, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    (site / "cases").symlink_to(elsewhere)
    assert main(["publish", "--results", str(report_dir / "results"), "--out", str(site)]) == 2
    assert f"{site / 'cases'} is a link: not followed" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


def test_a_link_planted_at_a_results_copy_is_replaced_never_written_through(report_dir, tmp_path):
    site = tmp_path / "site"
    publish([report_dir / "results"], site)
    copies = sorted((site / "data" / "results").glob("*.json"))
    assert copies
    victim = tmp_path / "victim"
    victim.write_text("mine")
    copies[0].unlink()
    copies[0].symlink_to(victim)
    publish([report_dir / "results"], site)
    assert victim.read_text() == "mine" and not copies[0].is_symlink() and copies[0].read_text().startswith("{")


def test_links_in_the_asv_folder_are_left_out_of_the_site(report_dir, tmp_path, capsys):
    asv = tmp_path / "asv"
    (asv / "graphs").mkdir(parents=True)
    (asv / "index.html").write_text("<html>asv</html>")
    (asv / "graphs" / "passwd").symlink_to("/etc/passwd")
    (asv / "up").symlink_to(tmp_path)
    site = tmp_path / "site"
    publish([report_dir / "results"], site, asv_site=asv)
    assert (site / "asv" / "index.html").is_file()
    assert not os.path.lexists(site / "asv" / "graphs" / "passwd") and not os.path.lexists(site / "asv" / "up")
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if line.endswith("a link in the asv site, left out of the published one")]) == 2


def test_two_publishes_into_one_site_at_once_keep_both_snapshots(tmp_path):
    import subprocess
    import sys
    folder = tmp_path / "results"
    folder.mkdir()
    results.write(results.Results(complete=True, environment=env("torch", "2.13.0"),
                                  cases=[record(i) for i in INSTANCES]), folder / "t.json")
    site = tmp_path / "site"
    argv = [sys.executable, "-m", "conformance", "publish", "--results", str(folder), "--out", str(site),
            "--history", str(site)]
    both = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    assert [p.wait(timeout=300) for p in both] == [0, 0], [p.stderr.read() for p in both]
    assert len(json.loads((site / "data" / "history.json").read_text())["snapshots"]) == 2
    assert not (tmp_path / "site.lock").exists()


def test_a_history_at_its_size_cap_keeps_the_newest_snapshots_and_says_so():
    from conformance.report.site import History, Snapshot, capped
    history = History(snapshots=[Snapshot(published=f"2026-01-{n:02d}", suites=["s"],
                                          outcomes={"run": {f"case-{i}": "conform" for i in range(50)}})
                                 for n in range(1, 21)])
    said = []
    text = capped(history, said.append, limit=len(history.model_dump_json()) // 3)
    kept = History.model_validate_json(text).snapshots
    assert 1 <= len(kept) < 20 and [s.published for s in kept] == [f"2026-01-{n:02d}" for n in range(21 - len(kept), 21)]
    assert len(said) == 1 and f"the {20 - len(kept)} oldest snapshots were dropped" in said[0]
