"""The committed docs/*.md are what `python -m conformance docs` writes from the committed inputs."""
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
