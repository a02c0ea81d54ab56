"""The contract between a room and its runs (conformance/engine/contract.py), on synthetic results."""
import pytest

from conformance import results
from conformance.engine.contract import check_run
from conformance.expected import load_expected
from conformance.spec import SpecError
from conftest import INSTANCES, env
from conftest import record as bare_record

IDS = [i.id for i in INSTANCES]
DOC_LINK = "https://example.org/doc"


def record(inst, verdict="conform", **kw):
    """A case record with one check, as the engine writes every conform or divergent case."""
    kw.setdefault("checks", [results.CheckRecord(check="value a @ step 0", expected="changed", observed="changed",
                                                 held=verdict == "conform")])
    return bare_record(inst, verdict, **kw)


def variant(name, link=DOC_LINK):
    return results.VariantRecord(name=name, reason="r", link=link, snippet="s.py")


def run(*cases, profile=(), complete=True, **axes):
    """A results document of every spec instance, conform unless `cases` replaces one."""
    by_id = {c.id: c for c in cases}
    doc = results.Results(complete=complete, environment=env("fw", "2.0"), profile=list(profile),
                          cases=[by_id.get(i.id, record(i)) for i in INSTANCES])
    doc.environment = doc.environment.model_copy(update=axes)
    return doc


def expected(tmp_path, text):
    (tmp_path / "fw").mkdir(exist_ok=True)
    (tmp_path / "fw" / "expected.yaml").write_text(text)
    return load_expected("fw", tmp_path)


FIRST, SECOND = INSTANCES[0], INSTANCES[1]


def test_a_conform_or_documented_run_needs_no_entry():
    doc = run(record(FIRST, "divergence", documented=results.Explanation(variants=[variant("bn-running-var-biased")])),
              profile=[variant("bn-running-var-biased")])
    assert check_run(doc, [], IDS) == []


def test_an_outcome_not_listed_fails_and_a_listed_one_holds(tmp_path):
    doc = run(record(FIRST, "unsupported", reason="no None gradient here"))
    assert check_run(doc, [], IDS) == [f"{FIRST.id}: unsupported (no None gradient here) is not listed in expected.yaml"]
    entries = expected(tmp_path, f"outcomes:\n  - outcome: unsupported\n    cases: ['{FIRST.id}']\n"
                                 f"    reason: no None gradient\n    why: the framework has none\n")
    assert check_run(doc, entries, IDS) == []


def test_a_stale_entry_fails(tmp_path):
    entries = expected(tmp_path, f"outcomes:\n  - outcome: error\n    cases: ['{SECOND.id}']\n    why: it crashes\n")
    problems = check_run(run(), entries, IDS)
    assert problems == [f"expected.yaml:2 (error: it crashes): {SECOND.id} is conform (stale entry)"]


def test_an_entry_naming_no_case_fails(tmp_path):
    entries = expected(tmp_path, "outcomes:\n  - outcome: error\n    cases: ['no-such-case*']\n    why: w\n")
    assert check_run(run(), entries, IDS) == ["expected.yaml:2 (error: w): 'no-such-case*' names no case of the spec"]


def test_reason_and_variants_must_match(tmp_path):
    doc = run(record(FIRST, "error", reason="RuntimeError: boom"),
              record(SECOND, "divergence", explained_by=results.Explanation(variants=[variant("adam-epsilon-hat", None)])),
              profile=[variant("adam-epsilon-hat", None)])
    entries = expected(tmp_path, f"outcomes:\n  - outcome: error\n    cases: ['{FIRST.id}']\n    reason: ValueError\n"
                                 f"    why: w\n  - outcome: explained\n    cases: ['{SECOND.id}']\n"
                                 f"    variants: [bn-running-var-biased]\n    why: w\n")
    assert check_run(doc, entries, IDS) == [
        f"expected.yaml:2 (error: w): {FIRST.id}'s reason is 'RuntimeError: boom'",
        f"expected.yaml:6 (explained: w): {SECOND.id} needed adam-epsilon-hat"]


def test_an_undocumented_divergence_and_a_wrong_prediction_always_fail():
    doc = run(record(FIRST, "divergence", unexplained="value x: observed changed"),
              record(SECOND, "conform", unexplained="grad y: the profile predicts zero"))
    problems = check_run(doc, [], IDS)
    assert len(problems) == 2 and "undocumented divergence" in problems[0] and "profile predicts" in problems[1]


def test_unused_variants_fail_unless_listed_for_the_run(tmp_path):
    doc = run(profile=[variant("step-skips-frozen")], api="trainer")
    assert "step-skips-frozen is in force for this run but no divergence needed it" in check_run(doc, [], IDS)[0]
    entries = expected(tmp_path, "outcomes:\n  - outcome: unused\n    variants: [step-skips-frozen]\n"
                                 "    apis: [trainer]\n    why: the trainer conforms there\n")
    assert check_run(doc, entries, IDS) == []
    assert check_run(run(profile=[variant("step-skips-frozen")]), entries, IDS) != []  # out of its scope


def test_entries_are_scoped_by_version_and_run(tmp_path):
    doc = run(record(FIRST, "unsupported", reason="r"))
    entries = expected(tmp_path, f"outcomes:\n  - outcome: unsupported\n    cases: ['{FIRST.id}']\n"
                                 f"    versions: '<2'\n    why: w\n")
    assert check_run(doc, entries, IDS) != []  # the run is 2.0
    assert check_run(doc.model_copy(update={"environment": doc.environment.model_copy(
        update={"framework_version": "1.5"})}), entries, IDS) == []


def test_a_verdict_without_checks_fails():
    assert check_run(run(record(FIRST, checks=[])), [], IDS) == [f"{FIRST.id}: conform with no check recorded"]


def test_an_incomplete_or_partial_run_fails():
    doc = run(complete=False)
    doc.cases = doc.cases[1:]
    assert check_run(doc, [], IDS) == ["the run is incomplete (interrupted): run it again",
                                       f"1 cases of the spec are not in the run, e.g. {FIRST.id}"]


@pytest.mark.parametrize("text, message", [
    ("outcomes:\n  - outcome: explained\n    why: w\n", "lists the cases it holds for"),
    ("outcomes:\n  - outcome: unused\n    cases: [x]\n    variants: [adam-epsilon-hat]\n    why: w\n", "lists variants"),
    ("outcomes:\n  - outcome: error\n    cases: [x]\n", "missing key 'outcomes.0.why'"),
    ("outcomes:\n  - outcome: flaky\n    cases: [x]\n    why: w\n", "outcomes.0.outcome"),
    ("outcomes:\n  - outcome: explained\n    cases: [x]\n    reason: r\n    why: w\n", "'reason' belongs"),
    ("outcomes:\n  - outcome: explained\n    cases: [x]\n    variants: [nope]\n    why: w\n", "unknown variant 'nope'"),
    ("outcomes:\n  - outcome: error\n    cases: [x]\n    modes: [jit]\n    why: w\n", "'jit' is not a mode"),
])
def test_malformed_entries_are_one_line_with_their_line(tmp_path, text, message):
    with pytest.raises(SpecError, match=message):
        expected(tmp_path, text)


def test_a_data_parallel_run_answers_for_its_own_cases_and_the_variants_scoped_to_its_replicas(tmp_path):
    """It takes only the data-parallel cases: a single-process variant it never needs is the single-process runs'
    to answer for, a variant scoped to its replicas is its own; an entry names cases of the whole spec."""
    doc = run(profile=[variant("step-skips-frozen"), variant("replica-grads-averaged")], replicas="2")
    doc.profile[1].replicas = ["2"]
    doc.cases = doc.cases[:1]
    problems = check_run(doc, [], IDS[:1], IDS)
    assert problems == ["known.yaml: replica-grads-averaged is in force for this run but no divergence needed it "
                        "(scope it, or list it as unused in expected.yaml with why)"]
    entries = expected(tmp_path, f"outcomes:\n  - outcome: error\n    cases: [\"{SECOND.id}\"]\n    why: elsewhere\n")
    assert check_run(doc, entries, IDS[:1], IDS) == problems  # it names a case of the spec, if not of this run
    assert any("names no case of the spec" in p for p in check_run(doc, entries, IDS[:1]))
