"""The committed docs/*.md are what `python -m conformance docs` writes from the committed inputs; README and
the pages by hand link only to what exists."""
import re
from pathlib import Path

import pytest

from conformance.__main__ import main
from conformance.report import docs


def test_committed_docs_are_current():
    assert docs.stale() == [], "run `python -m conformance docs` and commit docs/"


def test_check_names_a_stale_page_and_writes_nothing(tmp_path, capsys):
    assert main(["docs", "--out", str(tmp_path)]) == 0
    (tmp_path / "cases.md").write_text("edited by hand\n")
    assert main(["docs", "--out", str(tmp_path), "--check"]) == 1
    assert "cases.md: differs" in capsys.readouterr().err
    assert (tmp_path / "cases.md").read_text() == "edited by hand\n"


def test_every_field_of_the_vocabulary_says_what_it_means():
    from conformance.spec import model
    for cls in (model.Case, model.Model, model.Layer, model.Optimizer, model.Step, model.Expect, model.Tolerance):
        missing = [name for name, field in cls.model_fields.items() if not field.description]
        assert not missing, f"{cls.__name__}: {missing} have no docstring (docs/spec.md shows it)"


def test_every_test_the_reliability_page_names_exists():
    """tests/reliability.yaml names its evidence by file::function: a renamed or deleted test fails here."""
    import re
    from conformance.oracle.known import REPOSITORY
    from conformance.spec.safe_yaml import load_yaml
    rows = load_yaml(docs.RELIABILITY)
    assert rows and all(row["tests"] for row in rows)
    for row in rows:
        for test in row["tests"]:
            path, name = test.split("::")
            assert re.search(rf"^def {name}\(", (REPOSITORY / path).read_text(), re.M), f"{test} does not exist"


ROOT = Path(__file__).resolve().parents[2]
# README's two commands for a fresh machine: the main job, and the tests (which .ci/run runs)
MAIN_JOB = "pip install tox && tools/with-python312 tox -e report"
TESTS = "pip install tox && tools/with-python312 tox -m tests -p auto"


def test_readme_is_a_short_guide_with_the_two_commands():
    """README is the newcomer's guide (reference material lives in docs/): at most 220 lines, with the two
    commands exactly as a fresh machine runs them, and .ci/run running the tests command."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 220, f"README.md has {len(readme.splitlines())} lines, more than 220: move reference material to docs/"
    for command in (MAIN_JOB, TESTS):
        assert f"\n    {command}\n" in readme, f"README.md lacks the command `{command}` (as an indented line of its own)"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^tools/with-python312 python3 -m tox -m tests -p auto\b", ci, re.M), \
        ".ci/run no longer runs README's test command"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))])
def test_relative_links_and_images_resolve(page):
    """Every relative link or image of README.md and docs/*.md names a file that exists, and a #heading it has."""
    path = ROOT / page
    text = re.sub(r"^(    |\t).*$", "", path.read_text(encoding="utf-8"), flags=re.M)  # code blocks hold no links
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, fragment = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in {
                _anchor(h) for h in re.findall(r"^#+ (.*)$", linked.read_text(encoding="utf-8"), re.M)}:
            broken.append(f"{target}: no such heading")
    assert not broken, f"{page}: {broken}"


def test_the_rooms_page_lists_every_env_of_the_manifests():
    from conformance.runners.manifest import load_rooms
    page = docs.rooms_md()
    for framework, manifest in load_rooms().items():
        for env in manifest.envs:
            assert f"| `{env.name}` |" in page, f"docs/rooms.md does not list {framework}'s env {env.name}"


def test_the_variants_page_shows_every_entry_of_every_room():
    from conformance.oracle.known import load_known
    from conformance.runners import ROOMS
    page = docs.variants_md()
    for room in ROOMS:
        for entry in load_known(room):
            section = page.split(f"\n## `{entry.variant}`\n", 1)[1].split("\n## ", 1)[0]
            assert f"| {room} | {docs._scope(entry)} |" in section, (room, entry.variant, docs._scope(entry))
