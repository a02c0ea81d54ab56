"""`conformance confirm`: each finding's snippet runs in its own process and what it prints is kept,
whatever it does; `publish --confirm` shows it on the findings page. No framework needed: the snippets
here are stand-ins written by the test."""
import html
import json
from pathlib import Path
from types import SimpleNamespace

from conformance import confirm as confirming
from conformance.confirm import ConfirmRun, SnippetOutput, confirm, failed, run_snippet
from conformance.report.site import publish


def script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(body)
    return path


def test_a_snippet_s_exit_status_and_the_end_of_its_output_are_kept(tmp_path):
    assert run_snippet(script(tmp_path, "ok.py", "print('framework 1.0: 0.5 vs reference 0.25')"))[:2] == \
        (0, "framework 1.0: 0.5 vs reference 0.25\n")
    code, text, _ = run_snippet(script(tmp_path, "bad.py", "import sys; print('x'); sys.exit(3)"))
    assert (code, text) == (3, "x\n")
    code, text, _ = run_snippet(script(tmp_path, "long.py", "print('a' * 20000); print('verdict')"))
    assert text.startswith("[...]\n") and text.endswith("verdict\n") and len(text) <= confirming.MAX_OUTPUT + 10


def test_a_hanging_snippet_is_killed_and_recorded(tmp_path):
    code, text, seconds = run_snippet(script(tmp_path, "hang.py", "print('started', flush=True)\nwhile True: pass"),
                                      timeout=2)
    assert code is None and text.startswith("started") and "[killed after 2 s]" in text and seconds < 60


LEAVES_A_FILE = "import tempfile\nprint(tempfile.mkstemp()[1], flush=True)\n"


def test_what_a_snippet_leaves_in_its_temporary_folder_goes_with_it_killed_or_not(tmp_path):
    _, text, _ = run_snippet(script(tmp_path, "leaves.py", LEAVES_A_FILE))
    _, hung, _ = run_snippet(script(tmp_path, "hangs.py", LEAVES_A_FILE + "while True: pass"), timeout=2)
    left = [Path(text.splitlines()[0]), Path(hung.splitlines()[0])]
    assert all(p.name.startswith("tmp") for p in left) and not any(p.exists() for p in left), left


def test_only_findings_that_hold_for_the_installed_version_run(tmp_path, monkeypatch):
    known = [SimpleNamespace(variant="holds", link=None, versions=">=2", snippet=str(script(tmp_path, "a.py", "print('A')"))),
             SimpleNamespace(variant="fails", link=None, versions="", snippet=str(script(tmp_path, "b.py", "raise SystemExit(1)"))),
             SimpleNamespace(variant="older", link=None, versions="<2", snippet=str(script(tmp_path, "c.py", "print('C')"))),
             SimpleNamespace(variant="cited", link="https://example.org", versions="", snippet=str(tmp_path / "d.py"))]
    monkeypatch.setattr(confirming, "load_known", lambda framework: known)
    lines = []
    path = confirm("torch", "2.13.0", tmp_path / "out", say=lines.append)
    assert path == tmp_path / "out" / "torch-2.13.0.json"
    record = ConfirmRun.model_validate_json(path.read_text())
    assert [(s.variant, s.returncode, s.output) for s in record.snippets] == [("holds", 0, "A\n"), ("fails", 1, "")]
    assert failed(path) == ["fails"] and lines[1].startswith("confirm torch 2.13.0 [2/2] fails: exit 1")


def test_the_findings_page_shows_what_each_snippet_printed(report_dir, tmp_path, capsys):
    folder = tmp_path / "confirm"
    folder.mkdir()
    printed = SnippetOutput(variant="adam-shared-step-counter", snippet="x.py", returncode=0, seconds=1.0,
                            output="tensorflow 2.21.0: step counter 6 <vs> reference 3\nconfirmed")
    (folder / "tensorflow-2.21.0.json").write_text(ConfirmRun(
        framework="tensorflow", version="2.21.0", suite_sha="abc1234", finished="2026-12-03T00:00:00+00:00",
        snippets=[printed]).model_dump_json())
    (folder / "torch-2.13.0.json").write_text(json.dumps({"framework": "torch"}))
    site = tmp_path / "site"
    publish([report_dir / "results"], site, confirm_dir=folder)
    page = (site / "upstream.html").read_text()
    assert "What it prints on tensorflow 2.21.0:\n  confirmed" in page
    assert "step counter 6 <vs> reference 3" in html.unescape(page) and "<vs>" not in page  # escaped
    assert f"{folder / 'torch-2.13.0.json'}: not a record of `conformance confirm`" in capsys.readouterr().err
    publish([report_dir / "results"], site, confirm_dir=tmp_path / "none")
    assert "No output of this snippet was published" in (site / "upstream.html").read_text()
