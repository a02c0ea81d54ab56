"""The audit without any framework: the rules that turn observations into findings, the walk through
plain containers, and the command line's answers to bad input (the child fails before a framework
would be needed). The rooms' tests run the probes on real models (runners/<fw>/tests/test_audit.py)."""
import json
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings, strategies as st

from conformance.auditor.findings import analyse, explain, step_problem
from conformance.auditor.kinds import KINDS
from conformance.auditor.observe import DecaySetting, Inventory, Layer, Param, ParamStep, StepObservation
from conformance.auditor.walk import plain_contents
from conformance.oracle.variants import VARIANTS
from conformance.runners import ROOMS


def param(name, layer="l", trainable=True, statistic=False, registered=True, in_optimizer=True, decayed=None):
    return Param(name=name, layer=layer, layer_type="Linear", size=4, trainable=trainable, statistic=statistic,
                 registered=registered, in_optimizer=in_optimizer, decayed=decayed)


def inventory(params, layers=(), decay_settings=(), has_modes=True):
    return Inventory(framework="torch", version="2.13.0", model_type="Net", params=list(params),
                     layers=list(layers), decay_settings=list(decay_settings), has_modes=has_modes)


def seen(grad="nonzero", moved=True, was_zero=False):
    return ParamStep(grad=grad, grad_norm=None if grad == "none" else 1.0, moved=moved,
                     change=0.1 if moved else 0.0, was_zero=was_zero)


def step(index, params, training=True, modes=None, updates=1):
    return StepObservation(step=index, updates=updates, model_training=training, modes=modes or {},
                           params=params, seconds=0.0)


def kinds(findings):
    return {(f.kind, f.subject) for f in findings}


def test_every_kind_names_variants_of_the_vocabulary():
    for name, kind in KINDS.items():
        assert kind.title and all(v in VARIANTS for v in kind.variants), name


def test_a_plain_container_layer_is_one_finding_and_its_insides_are_not_repeated():
    inv = inventory([param("blocks[0].w", layer="blocks[0]", registered=False, in_optimizer=False),
                     param("blocks[0].bn.running_mean", layer="blocks[0].bn", statistic=True, trainable=False,
                           registered=False, in_optimizer=False)],
                    layers=[Layer(path="blocks[0]", type="Block", registered=False),
                            Layer(path="blocks[0].bn", type="BatchNorm", registered=False)])
    findings, _ = analyse(inv, [])
    assert kinds(findings) == {("unregistered", "blocks[0]")}
    assert findings[0].detail == "1 parameters, none of them held by the optimizer"


def test_static_kinds_read_the_inventory_alone():
    inv = inventory([param("a.w", in_optimizer=False), param("bn.running_var", statistic=True, trainable=False),
                     param("frozen.w", trainable=False, in_optimizer=False)],
                    decay_settings=[DecaySetting(setting="exclude(['gamma'])", names=["gamma"], excludes=[],
                                                 unmatched=["gamma"])])
    findings, _ = analyse(inv, [])
    assert kinds(findings) == {("not-in-optimizer", "a.w"), ("statistics-in-optimizer", "bn.running_var"),
                               ("decay-exclusion-ineffective", "exclude(['gamma'])")}


def test_moves_are_judged_by_gradient_flag_and_mode():
    inv = inventory([param("used.w"), param("unused.w", decayed=True), param("frozen.w", trainable=False),
                     param("bn.running_mean", layer="bn", statistic=True, trainable=False, in_optimizer=False)])
    steps = [step(0, {"used.w": seen(), "unused.w": seen("zero"), "frozen.w": seen("none"),
                      "bn.running_mean": seen("unread")}, training=True),
             step(1, {"used.w": seen(), "unused.w": seen("none"), "frozen.w": seen("none", moved=False),
                      "bn.running_mean": seen("unread")}, training=False)]
    findings, _ = analyse(inv, steps)
    assert kinds(findings) == {("moved-without-gradient", "unused.w"), ("frozen-but-moved", "frozen.w"),
                               ("statistics-moved-in-eval", "bn.running_mean"), ("no-gradient", "unused.w")}
    by = {(f.kind, f.subject): f for f in findings}
    assert by["moved-without-gradient", "unused.w"].steps == [0, 1]
    assert by["frozen-but-moved", "frozen.w"].steps == [0]
    assert by["statistics-moved-in-eval", "bn.running_mean"].steps == [1]
    assert [f.kind for f in findings] == sorted((f.kind for f in findings), key=list(KINDS).index)


def test_a_mode_mismatch_is_reported_at_the_outermost_layer():
    inv = inventory([], layers=[Layer(path=p, type="T", registered=True) for p in ("a", "a.b", "c")])
    findings, _ = analyse(inv, [step(0, {}, training=False, modes={"a": True, "a.b": True})])
    assert kinds(findings) == {("mode-mismatch", "a")}
    assert analyse(inventory([], has_modes=False), [step(0, {}, training=False, modes={"a": True})])[0] == []


def test_no_gradient_needs_every_updated_step_without_one_and_a_zero_value_is_a_note():
    inv = inventory([param("x.w", decayed=True), param("y.w")])
    steps = [step(0, {"x.w": seen("zero", moved=False, was_zero=True), "y.w": seen("none", moved=False)}),
             step(1, {"x.w": seen("none", moved=False, was_zero=True), "y.w": seen("nonzero")})]
    findings, notes = analyse(inv, steps)
    assert kinds(findings) == {("no-gradient", "x.w")}
    assert len(notes) == 1 and "x.w" in notes[0] and "cannot tell" in notes[0]


def test_a_step_that_says_nothing_about_training_is_named():
    idle = step(0, {"w": seen(moved=False)}, updates=0)
    assert "never updated" in step_problem([idle])
    assert "no parameter and no statistic changed" in step_problem([step(0, {"w": seen(moved=False)})])
    assert step_problem([step(0, {"w": seen()})]) is None


def test_the_explaining_variant_comes_from_the_audited_frameworks_profile():
    inv = inventory([param("blocks[0].w", layer="blocks[0]", registered=False, in_optimizer=False)],
                    layers=[Layer(path="blocks[0]", type="Block", registered=False)])
    findings, _ = analyse(inv, [])
    explain(findings, "torch", "2.13.0")
    assert findings[0].variant == "plain-containers-unregistered"
    assert set(findings[0].porting) == set(ROOMS) - {"torch"}
    assert findings[0].porting["tensorflow"].startswith("not plain-containers-unregistered")
    explain(findings, "torch", "1.0")  # a version outside every range: no variant holds
    assert findings[0].variant == "plain-containers-unregistered"  # kept from before: explain only fills


observations = st.fixed_dictionaries({
    "grad": st.sampled_from(["none", "zero", "nonzero", "unread"]), "moved": st.booleans(), "was_zero": st.booleans()})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans()), min_size=1, max_size=6),
       st.lists(st.lists(observations, min_size=6, max_size=6), max_size=4), st.lists(st.booleans(), min_size=4, max_size=4))
def test_findings_name_only_what_was_observed(flags, observed, training):
    params = [param(f"p{n}.w", layer=f"p{n}", trainable=t, statistic=s, registered=r, in_optimizer=o)
              for n, (t, s, r, o) in enumerate(flags)]
    steps = [step(i, {p.name: seen(**o[n]) for n, p in enumerate(params)}, training=training[i])
             for i, o in enumerate(observed)]
    findings, _ = analyse(inventory(params), steps)
    names = {p.name for p in params}
    for f in findings:
        assert f.kind in KINDS and f.subject in names
        p = next(p for p in params if p.name == f.subject)
        if f.kind in ("moved-without-gradient", "frozen-but-moved", "statistics-moved-in-eval"):
            assert f.steps and all(steps[s].params[p.name].moved for s in f.steps)
        if f.kind == "moved-without-gradient":
            assert p.trainable and not p.statistic
            assert all(steps[s].params[p.name].grad in ("none", "zero") for s in f.steps)
        if f.kind == "frozen-but-moved":
            assert not p.trainable and not p.statistic


def test_the_walk_finds_objects_through_nested_containers_once_and_stops_on_cycles():
    class Leaf:
        pass

    a, b = Leaf(), Leaf()
    loop = []
    loop.append(loop)
    found = list(plain_contents({"blocks": [a, (b, {"k": a})], "loop": loop, "text": "ab", "n": 3}, (Leaf,)))
    assert found == [("blocks[0]", a), ("blocks[1][0]", b)]


# ------------------------------------------------------------------ the command line on bad input
def audit(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "conformance", "audit", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("body, says", [
    ("x = 1", "defines no function build"),
    ("def build():\n    raise KeyError('weights.pt')", "build() raised KeyError: 'weights.pt'"),
    ("def build():\n    return [1]", "build() returned a list, not a dict"),
    ("def build():\n    return {'model': 1}", "build() returned a dict without optimizer, step"),
    ("def build():\n    return {'model': 1, 'optimizer': 2, 'step': 3}", "build()['step'] is a int, not a callable"),
    ("import no_such_module_here", "failed to import: ModuleNotFoundError"),
    ("def build():\n    raise SystemExit(5)", "build() raised SystemExit: 5"),
    ("def build():\n    raise KeyboardInterrupt", "build() raised KeyboardInterrupt"),
    ("raise SystemExit('bye')", "failed to import: SystemExit: bye"),
])
def test_a_bad_target_is_one_line_and_exit_2(tmp_path, body, says):
    (tmp_path / "user.py").write_text(body + "\n")
    done = audit(f"{tmp_path / 'user.py'}:build", "--framework", "torch", "--json", str(tmp_path / "a.json"),
                 "--junit", str(tmp_path / "a.xml"), "--sarif", str(tmp_path / "a.sarif"))
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 2, done.stderr  # started, error
    assert "Traceback" not in done.stderr
    assert says in json.loads((tmp_path / "a.json").read_text())["error"]
    assert says in (tmp_path / "a.xml").read_text().replace("&#x27;", "'").replace("&apos;", "'")
    assert not json.loads((tmp_path / "a.sarif").read_text())["runs"][0]["invocations"][0]["executionSuccessful"]


@pytest.mark.parametrize("args, says", [
    (["nofile.py:build", "--framework", "torch"], "nofile.py: no such file"),
    (["user.py", "--framework", "torch"], "is not FILE.py:FUNC"),
    (["user.py:build", "--framework", "jaxx"], "unknown framework 'jaxx'"),
    (["user.py:build", "--framework", "torch", "--steps", "0"], "--steps 0"),
    (["user.py:build", "--framework", "torch", "--allow", "allow.yaml"], "unknown kind 'unregisterd'"),
    (["user.py:build", "--framework", "torch", "--allow", "bad.yaml"], "bad.yaml"),
])
def test_bad_options_are_one_line_and_exit_2(tmp_path, args, says):
    (tmp_path / "user.py").write_text("def build():\n    return {}\n")
    (tmp_path / "allow.yaml").write_text("allow:\n  - {kind: unregisterd, subject: '*', reason: typo}\n")
    (tmp_path / "bad.yaml").write_text("allow: [\n")
    done = audit(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr


def test_a_gradient_norm_is_finite_or_absent_whatever_the_dtype():
    import numpy as np
    from conformance.auditor.observe import grad_state
    assert grad_state(np.full(1000, 300, np.float16)) == ("nonzero", pytest.approx(300 * 1000 ** 0.5, rel=1e-3))
    assert grad_state(np.array([np.inf, 1.0], np.float32)) == ("nonzero", None)
    assert grad_state(np.zeros(3, np.float32)) == ("zero", 0.0)


def test_an_escape_sequence_in_the_target_reaches_the_console_escaped(tmp_path):
    """The header names the target and the error quotes it: a file named with an escape sequence shows escaped."""
    user = tmp_path / "user\x1b[2J.py"
    user.write_text("x = 1\n")
    done = audit(f"{user}:build", "--framework", "torch", "--json", str(tmp_path / "a.json"))
    assert done.returncode == 2, done.stderr
    assert "\x1b" not in done.stderr and "user\\x1b[2J.py" in done.stderr, done.stderr


@pytest.mark.parametrize("option", ["--json", "--junit", "--sarif"])
def test_json_is_never_written_over_a_device_a_fifo_or_a_link(tmp_path, option):
    import os
    import stat
    (tmp_path / "user.py").write_text("def build():\n    return {}\n")
    (tmp_path / "kept.json").write_text("mine")
    (tmp_path / "link.json").symlink_to(tmp_path / "kept.json")
    os.mkfifo(tmp_path / "fifo.json")
    for target in ["/dev/null", tmp_path / "fifo.json", tmp_path / "link.json"]:
        done = audit(f"{tmp_path / 'user.py'}:build", "--framework", "torch", option, str(target))
        assert done.returncode == 2 and "not a regular file: not replaced" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo.json").st_mode)
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "kept.json").read_text() == "mine"


def test_a_json_write_that_fails_mid_audit_is_said_once(tmp_path, capsys):
    from conformance.auditor.cli import Out
    out = Out(tmp_path / "a.json")
    out.write({"step": 1})
    assert json.loads((tmp_path / "a.json").read_text()) == {"step": 1} and out.failed is None
    (tmp_path / "a.json").unlink()
    (tmp_path / "a.json").symlink_to("/dev/null")
    out.write({"step": 2})
    out.write({"step": 3})
    err = capsys.readouterr().err.strip().splitlines()
    assert out.failed and len(err) == 1 and "not a regular file" in err[0]
    assert (tmp_path / "a.json").is_symlink()


FORGED_DONE = """\
import gc, os
from multiprocessing.connection import Connection
def build():
    conn = next(c for c in gc.get_objects() if isinstance(c, Connection) and c.writable)
    conn.send_bytes(b'["done"]')
    os._exit(0)
"""


def test_a_forged_done_from_the_child_is_no_clean_audit(tmp_path):
    (tmp_path / "user.py").write_text(FORGED_DONE)
    done = audit(f"{tmp_path / 'user.py'}:build", "--framework", "torch", "--json", str(tmp_path / "a.json"))
    assert done.returncode == 3, done.stderr
    assert "said done after 0 of 3 step(s), before describing the model" in done.stderr
    assert json.loads((tmp_path / "a.json").read_text())["error"]


def test_replica_findings_name_what_differs_between_the_ranks_after_each_step():
    from conformance.auditor.findings import replica_findings
    inv = inventory([param("a.w"), param("bn.running_mean", layer="bn", statistic=True, trainable=False)])
    same, other = {"a.w": "1", "bn.running_mean": "2"}, {"a.w": "1", "bn.running_mean": "3"}
    found = replica_findings(inv, [[same, same, same], [same, other, {"a.w": "9", "bn.running_mean": "2"}]])
    assert {(f.kind, f.subject, tuple(f.steps)) for f in found} == {
        ("replica-statistics-differ", "bn.running_mean", (1,)), ("replicas-disagree", "a.w", (2,))}
    assert replica_findings(inv, [[same], [same, other]]) == []  # only the steps every rank took


def test_the_first_rank_that_failed_on_its_own_is_the_audits_error():
    from conformance.auditor.cli import first_rank_failure
    stopped = (None, [], (3, "stopped during step 2 of 3: another rank failed"), [])
    failed = (None, [], (3, "step 2 of 3 raised RuntimeError: boom"), [])
    assert first_rank_failure([stopped, failed]) == (3, "rank 1: step 2 of 3 raised RuntimeError: boom")
    assert first_rank_failure([stopped, stopped])[1].startswith("rank 0: stopped")
    assert first_rank_failure([(None, [], None, []), (None, [], None, [])]) is None


def test_a_scheduler_that_ends_before_the_ranks_stops_them_and_is_the_error(tmp_path):
    """The process the ranks meet at (msrun's scheduler) ending first: every rank stops, none is blamed, and what the
    scheduler printed last says why; one that ends with status 0 (its ranks left it) is no failure."""
    from conformance.auditor.cli import first_rank_failure, run_replicas
    (tmp_path / "user.py").write_text("import time\n\ndef build():\n    time.sleep(60)\n")
    dying = lambda world, port: (f"import sys; print('no cluster of {world} at', {port}); sys.exit(5)", {})
    started = time.monotonic()
    ranks, why = run_replicas(f"{tmp_path / 'user.py'}:build", "torch", 3, 60.0, 2, lambda r, w, p: {}, None, dying)
    assert time.monotonic() - started < 30
    assert why.startswith("the scheduler the ranks meet at ended (exit status 5) before them: no cluster of 2 at")
    assert all("another rank failed" in failure[1] for _, _, failure, _ in ranks)
    (tmp_path / "user.py").write_text("def build():\n    return {}\n")
    leaving = lambda world, port: ("pass", {})
    ranks, why = run_replicas(f"{tmp_path / 'user.py'}:build", "torch", 3, 60.0, 2, lambda r, w, p: {}, None, leaving)
    assert why is None and "returned a dict without" in first_rank_failure(ranks)[1]


@pytest.mark.parametrize("args, says", [
    (["--replicas", "0"], "--replicas 0: expected 1 to 64"),
    (["--framework", "jax", "--replicas", "2"], "the jax room starts no audited replicas yet (torch, paddle, "
                                                "mindspore, tensorflow do)"),
])
def test_replicas_the_audit_cannot_start_are_one_line(tmp_path, args, says):
    (tmp_path / "user.py").write_text("def build():\n    return {}\n")
    framework = [] if "--framework" in args else ["--framework", "torch"]
    done = audit("user.py:build", *framework, *args, cwd=tmp_path)
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_replicas_a_room_cannot_make_in_its_process_are_one_line(tmp_path):
    """TensorFlow keeps its replicas in the audited process, made there before the user's code runs: without
    TensorFlow installed (this env) that fails in one line, before FUNC is loaded."""
    (tmp_path / "user.py").write_text("raise SystemExit('FUNC was loaded')\n\ndef build():\n    return {}\n")
    done = audit("user.py:build", "--framework", "tensorflow", "--replicas", "2", cwd=tmp_path)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert done.returncode == 2 and len(errors) == 1 and "FUNC was loaded" not in done.stderr, done.stderr
    assert errors[0].startswith("error: --replicas 2: tensorflow could not make its replicas in the audited process: "
                                "ModuleNotFoundError: No module named 'tensorflow'")
