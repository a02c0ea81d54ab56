"""The command line, end to end on the reference adapter (no framework needed)."""
import json

import pytest

from conformance import results
from conformance import runners
from conformance.__main__ import main


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_list(capsys):
    code, out, err = run(capsys, "list")
    assert code == 0 and out.splitlines()[0].startswith("seed-1-decay-moves-unused-layer")
    assert "cases" in err


def test_run_writes_complete_results(capsys, tmp_path):
    out_file = tmp_path / "sub" / "ref.json"
    code, out, err = run(capsys, "run", "--framework", "reference", "-k", "seed-", "--out", str(out_file))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].startswith("[ 1/") and "conform" in lines[1]
    assert "conform" in lines[-1] and str(out_file) in lines[-1]
    doc = results.read(out_file)
    assert doc.complete and doc.schema_version == 2
    assert {c.base_id for c in doc.cases} == {f"seed-{n}-{s}" for n, s in [
        (1, "decay-moves-unused-layer"), (2, "plain-list-sublayers"), (3, "stop-gradient-vs-frozen"),
        (4, "bn-stats-not-regularized"), (5, "unused-bn-grad"), (1, "conv-decay-moves-unused-layer"),
        (2, "conv-blocks-in-plain-list"), (3, "conv-stop-gradient-vs-frozen")]}
    env = doc.environment
    assert env.framework == "reference" and env.device == "cpu" and env.mode == "eager"
    assert env.python and env.numpy and env.platform and env.suite_sha and len(env.spec_hash) == 16
    assert doc.summary["conform"] == len(doc.cases)
    raw = json.loads(out_file.read_text())
    case = raw["cases"][0]
    assert {"id", "topic", "title", "references", "verdict", "documented", "explained_by", "unexplained", "checks", "duration_s"} <= case.keys()
    assert {"check", "expected", "observed", "held"} == case["checks"][0].keys()
    assert not list(out_file.parent.glob("*.tmp"))


@pytest.mark.parametrize("argv, code, needle", [
    (["run", "--framework", "caffe"], 2, "invalid choice: 'caffe'"),
    (["run", "--framework", "reference", "--device", "tpu"], 2, "invalid choice: 'tpu'"),
    (["run", "--framework", "reference", "-k", "no-such-case"], 2, "no case id contains 'no-such-case'"),
    (["run", "--framework", "paddle", "--adapter", "conformance_nope:X"], 3, "is not installed"),
    (["run", "--framework", "reference", "--out", "/proc/forbidden/x.json"], 2, "cannot write results to"),
    (["--spec", "/nonexistent", "list"], 2, "no spec files"),
    (["run", "--framework", "reference", "--api", "trainer"], 3, "offers the runs eager loop, eager loop, 2 replicas; not eager trainer"),
    (["run", "--framework", "reference", "--backend", "inductor"], 3, "not eager (inductor) loop"),
    (["run", "--framework", "reference", "--every-run", "--mode", "graph"], 2, "--every-run takes no --mode"),
    (["run", "--framework", "reference", "--every-run", "--out", "x.json"], 2, "no --out, --resume or --only-errors"),
    (["run", "--framework", "reference", "--api", "fit"], 2, "invalid choice: 'fit'"),
    (["run", "--framework", "reference", "--replicas", "2", "--nodes", "2", "--node-address", "a" * 100_000], 2,
     "longer than a host name can be (253 characters)"),
    (["run", "--framework", "reference", "--replicas", "2", "--nodes", "2", "--node-address", "b" * 70 + ".example"],
     2, "'idna' codec failed"),
])
def test_bad_input_is_one_line(capsys, argv, code, needle):
    got, out, err = run(capsys, *argv)
    assert got == code
    assert needle in err and len(err.strip().splitlines()) == 1


def test_missing_framework_names_tox_env(capsys, monkeypatch):
    monkeypatch.setattr(runners.room("torch"), "ADAPTER", "conformance_no_such_module.x:Runner")
    code, out, err = run(capsys, "run", "--framework", "torch")
    assert code == 3 and "tox -e torch" in err and len(err.strip().splitlines()) == 1


def test_repro_prints_steps_and_checks(capsys):
    code, out, err = run(capsys, "repro", "seed-1-decay-moves-unused-layer[sgd]", "--framework", "reference")
    assert code == 0, err
    assert "step 1  path second" in out and "first.weight" in out
    assert "ok   value first.weight @ step 1: expected unchanged, observed unchanged" in out
    code, out, err = run(capsys, "repro", "seed-1-decay-moves-unused-layer", "--framework", "reference")
    assert code == 2 and "has 4 instances" in err


def test_text_from_outside_prints_escaped_on_one_line(capsys):
    from conformance.kernel.lines import say
    say("error: \x1b[2Jcleared\rover\nnext caf\udce9")
    out = capsys.readouterr().out
    assert out == "error: \\x1b[2Jcleared\\rover\nnext caf\\udce9\n"
