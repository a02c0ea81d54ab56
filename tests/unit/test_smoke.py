"""A room's smoke runs (runners.base.Offers.smoke): a run that executes only the spec's smoke subset unless a
selection is asked, where the room's main run is another (the jax room's eager run beside nnx.jit)."""
import dataclasses

from conformance import results
from conformance.__main__ import main
from conformance.engine.contract import check_run
from conformance.oracle.reference import ReferenceRunner
from conformance.report.page import build
from conformance.run import Run
from conformance.runners import ROOMS, offers
from conformance.runners.base import Offers
from conformance.spec import SPEC_DIR, TOPICS, load_spec, smoke
from conftest import INSTANCES, env, record
from test_report import write_run

SPEC = load_spec(SPEC_DIR)


def test_the_smoke_subset_is_every_seed_and_the_first_case_of_each_other_topic():
    subset = smoke(SPEC)
    assert [i for i in SPEC if i.topic == "seeds"] == [i for i in subset if i.topic == "seeds"]
    for topic in TOPICS[1:]:
        mine = [i for i in SPEC if i.topic == topic]
        first = [i for i in mine if i.case.id == mine[0].case.id]  # with every instance of its matrix
        assert [i for i in subset if i.topic == topic] == first, topic
    assert len(subset) < len(SPEC) / 3


def test_a_smoke_run_takes_the_subset_of_its_own_cases_and_the_other_runs_all_of_theirs():
    room = Offers(devices=("cpu",), runs=({"mode": "graph", "backend": "jit"}, {}, {"replicas": "2"}),
                  smoke=({}, {"replicas": "2"}), smoke_why="w")
    jit, eager, dp = (run.replace(version="1.0") for run in room.every_run("x"))
    assert [room.is_smoke(r) for r in (jit, eager, dp)] == [False, True, True]
    assert room.instances(jit, SPEC) == [i for i in SPEC if i.case.replicas == 1]
    assert room.instances(eager, SPEC) == smoke([i for i in SPEC if i.case.replicas == 1])
    assert {i.case.id for i in room.instances(dp, SPEC)} == {next(i for i in SPEC if i.case.replicas == 2).case.id}
    assert room.is_smoke(Run("x", device="cuda")) and not room.is_smoke(Run("x", mode="graph", backend="other"))


def test_jax_runs_the_whole_spec_under_jit_and_the_smoke_subset_eager():
    room = offers("jax")
    assert "jax" in ROOMS and room.runs[0] == {"mode": "graph", "backend": "jit"}
    assert [room.is_smoke(r) for r in room.every_run("jax")] == [False, True] and room.smoke_why


def test_a_smoke_run_runs_its_subset_and_an_asked_case_besides(tmp_path, monkeypatch):
    """`run` on a smoke run writes the subset (asked: its ids); -k still runs any case it names."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ReferenceRunner, "offers", dataclasses.replace(ReferenceRunner.offers, smoke=({},)))
    assert main(["run", "--framework", "reference"]) == 0
    doc = results.read(next((tmp_path / "reports" / "results").glob("*.json")))
    subset = [i.id for i in smoke([i for i in SPEC if i.case.replicas == 1])]
    assert [c.id for c in doc.cases] == subset and doc.asked == subset and doc.complete
    outside = next(i for i in SPEC if i.case.replicas == 1 and i.id not in subset)
    assert main(["run", "--framework", "reference", "--case", outside.id, "--out", str(tmp_path / "one.json")]) == 0
    assert [c.id for c in results.read(tmp_path / "one.json").cases] == [outside.id]


def test_a_run_of_part_of_the_spec_answers_for_no_unused_variant():
    """The run of the whole spec answers whether each variant of the profile was needed; a smoke run cannot."""
    held = [results.CheckRecord(check="value a @ step 0", expected="changed", observed="changed", held=True)]
    doc = results.Results(complete=True, environment=env("fw", "2.0"), cases=[record(i, checks=held) for i in INSTANCES[:2]],
                          profile=[results.VariantRecord(name="step-skips-frozen", reason="r", link=None, snippet="s.py")])
    ids = [i.id for i in INSTANCES]
    assert any("no divergence needed it" in p for p in check_run(doc, [], ids[:2], ids))
    doc.asked = ids[:2]
    assert check_run(doc, [], ids[:2], ids) == []


def test_a_smoke_run_is_compared_with_the_main_run_of_its_version(tmp_path):
    """The report's "Eager, graph and trainer" section sets each run beside the version's main run: the jit run
    where the eager run is a smoke run."""
    folder = tmp_path / "results"
    folder.mkdir()
    jit = [record(i) for i in INSTANCES]
    eager = [record(i) for i in INSTANCES[:3]]
    eager[1] = record(INSTANCES[1], "divergence", reason="only eager")
    write_run(folder, env("jax", "0.12.0").model_copy(update=dict(mode="graph", backend="jit")), jit)
    name = env("jax", "0.12.0").run.name
    results.write(results.Results(complete=True, environment=env("jax", "0.12.0"), cases=eager,
                                  asked=[c.id for c in eager]), folder / f"{name}.json")
    page = build(folder, tmp_path, bench_dir=None).read_text()
    section = page.split('id="executions"', 1)[1].split("<h2", 1)[0]
    assert "graph (jit) loop → eager loop: 1 case differs" in section
    assert "eager loop → graph (jit) loop" not in section
