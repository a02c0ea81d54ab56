"""The audit on torch: every example of examples/audit/torch/ gives exactly the findings its
expected.yaml lists, and the command line keeps its promises on bad input."""
import json
import textwrap

import pytest

import conformance
from conformance.auditor.examples import EXAMPLES_DIR, build, expected, observed, run_cli

EXPECTED = expected("torch")


@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_each_example_gives_exactly_its_findings(target):
    report = conformance.audit(**build("torch", target), framework="torch")
    assert report.error is None
    assert observed(report) == EXPECTED[target]


def test_the_audit_does_not_change_what_the_step_does():
    """The same seeded example, stepped with and without the audit, ends with the same weights."""
    import torch
    plain, audited = build("torch", "ddp_zero_loss_workaround.py:build"), build("torch", "ddp_zero_loss_workaround.py:build")
    for _ in range(3):
        plain["step"]()
    conformance.audit(**audited, framework="torch")
    for (name, a), (_, b) in zip(plain["model"].state_dict().items(), audited["model"].state_dict().items()):
        assert torch.equal(a, b), name
    assert not audited["optimizer"]._optimizer_step_pre_hooks  # the hook is gone


def _audit(tmp_path, target, *options):
    return run_cli("torch", tmp_path, target, *options)


def test_findings_outside_the_allow_file_exit_1_and_the_json_says_them(tmp_path):
    done = _audit(tmp_path, str(EXAMPLES_DIR / "torch" / "seed2_plain_list_resnet.py:build"))
    assert done.returncode == 1, done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["schema"] == 1 and doc["steps_done"] == 3 and doc["error"] is None
    assert {f["kind"] for f in doc["findings"]} == {"unregistered"}
    assert "block1.layers[0]" in done.stdout and "step 3/3" in done.stderr


def test_an_allow_file_covers_findings_and_reports_its_stale_entries(tmp_path):
    allow = tmp_path / "allow.yaml"
    allow.write_text(textwrap.dedent("""\
        allow:
          - {kind: unregistered, subject: "block*.layers[[]*", reason: the blocks are trained elsewhere}
          - {kind: no-gradient, subject: head.*, reason: no such layer any more}
        """))
    done = _audit(tmp_path, str(EXAMPLES_DIR / "torch" / "seed2_plain_list_resnet.py:build"), "--allow", str(allow))
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert all(f["allowed"] for f in doc["findings"])
    assert [e["subject"] for e in doc["stale_allow"]] == ["head.*"]
    assert "stale allow entry" in done.stdout


TARGET = textwrap.dedent("""\
    import os, signal, time
    import torch

    def build():
        model = torch.nn.Linear(2, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=0.1)
        calls = [0]

        def step():
            calls[0] += 1
            if calls[0] == 2:
                {second}
            optimizer.zero_grad()
            model(torch.ones(1, 2)).sum().backward()
            optimizer.step()

        return {{"model": model, "optimizer": optimizer, "step": step}}
    """)


@pytest.mark.parametrize("second, status, says", [
    ("raise RuntimeError('out of memory')", 3, "step 2 of 3 raised RuntimeError: out of memory"),
    ("time.sleep(3600)", 3, "step 2 of 3 did not finish within 20 s"),
    ("os.kill(os.getpid(), signal.SIGSEGV)", 3, "ended (signal SIGSEGV) during step 2 of 3"),
])
def test_a_failing_step_is_one_line_and_the_steps_before_it_are_kept(tmp_path, second, status, says):
    (tmp_path / "user.py").write_text(TARGET.format(second=second))
    # 20 s: ample for loading torch and one tiny step on a busy machine, and what the hang costs
    done = _audit(tmp_path, f"{tmp_path / 'user.py'}:build", "--timeout", "20")
    assert done.returncode == status, done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["steps_done"] == 1 and says in doc["error"] and "\n" not in doc["error"]
    assert "Traceback" not in done.stdout


@pytest.mark.parametrize("body, status, says", [
    ("return {'model': [1, 2], 'optimizer': None, 'step': print}", 2, "model is a builtins.list, not a torch.nn.Module"),
    ("m = torch.nn.Linear(2, 2)\n    return {'model': m, 'optimizer': 'sgd', 'step': print}", 2,
     "optimizer is a builtins.str, not a torch.optim.Optimizer"),
    ("m = torch.nn.Linear(2, 2)\n    o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
     "    return {'model': m, 'optimizer': o, 'step': lambda: None}", 3, "never updated in 3 step(s)"),
])
def test_what_build_returns_is_checked(tmp_path, body, status, says):
    (tmp_path / "user.py").write_text(f"import torch\n\ndef build():\n    {body}\n")
    done = _audit(tmp_path, f"{tmp_path / 'user.py'}:build")
    assert done.returncode == status, done.stdout + done.stderr
    assert says in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr



def test_a_reader_that_goes_away_ends_nothing(tmp_path):
    """`audit ... | head -1`: the findings' table meets a closed pipe; the audit still ends with its own status,
    its JSON written, and no traceback."""
    import subprocess
    import sys
    target = str(EXAMPLES_DIR / "torch" / "seed2_plain_list_resnet.py:build")
    with subprocess.Popen([sys.executable, "-m", "conformance", "audit", target, "--framework", "torch",
                           "--json", str(tmp_path / "audit.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=tmp_path) as proc:
        proc.stdout.close()  # the reader is gone before the table is printed
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=300) == 1, err
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert json.loads((tmp_path / "audit.json").read_text())["steps_done"] == 3



def test_the_pytest_fixture_fails_a_users_test_on_a_real_finding_and_passes_a_clean_model(tmp_path):
    """examples/audit/torch/test_audit_in_pytest.py, a user's own tests: conformance_audit (the plugin pytest loads
    from the installed suite) passes the clean ResNet and fails the seed-2 one (xfail, strict); --conformance-sarif
    holds its findings."""
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "pytest", "-rx", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           str(EXAMPLES_DIR / "torch" / "test_audit_in_pytest.py"), "--conformance-sarif",
                           str(tmp_path / "a.sarif")], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0 and "1 passed, 1 xfailed" in done.stdout, done.stdout + done.stderr
    results = json.loads((tmp_path / "a.sarif").read_text())["runs"][0]["results"]
    assert sorted({r["ruleId"] for r in results}) == ["unregistered"] and len(results) == 4


@pytest.mark.parametrize("optimizer", ["sgd", "lbfgs"])
def test_a_step_that_hands_the_optimizer_a_closure_is_read_after_its_backward(optimizer):
    """optimizer.step(closure) computes the gradients inside step() (Lightning, LBFGS): they are read as the
    closure returns. A clean model gives no finding; an unused layer gives no-gradient, as in a plain step."""
    import torch
    torch.manual_seed(0)
    model = torch.nn.ModuleDict({"used": torch.nn.Linear(4, 2), "unused": torch.nn.Linear(4, 2)})
    opt = (torch.optim.SGD(model.parameters(), lr=0.1) if optimizer == "sgd"
           else torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=3))
    x, y = torch.randn(8, 4), torch.randn(8, 2)

    def step():
        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model["used"](x), y)
            loss.backward()
            return loss
        opt.step(closure)

    report = conformance.audit(model, opt, step, framework="torch")
    assert report.error is None
    assert {(f.kind, f.subject) for f in report.findings} == {("no-gradient", "unused.weight"),
                                                            ("no-gradient", "unused.bias")}
    assert [s.updates for s in report.steps] == [1, 1, 1]


def test_replicas_the_audit_compares_the_ranks_of_distributed_data_parallel(tmp_path):
    """examples/audit/torch/ddp_replicas.py under `--replicas 2`: each rank started with torchrun's variables. DDP
    keeps the parameters equal and each rank's BatchNorm statistics its own; a head the forward skips leaves its
    bucket unreduced, the ranks train apart after step 1, and step 2 raises DDP's own message, named by rank."""
    example = str(EXAMPLES_DIR / "torch" / "ddp_replicas.py")
    done = _audit(tmp_path, f"{example}:build", "--replicas", "2")
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert done.returncode == 1 and doc["error"] is None and doc["steps_done"] == 3, done.stderr
    assert {(f["kind"], f["subject"]) for f in doc["findings"]} == {
        ("replica-statistics-differ", "norm.running_mean"), ("replica-statistics-differ", "norm.running_var")}
    done = _audit(tmp_path, f"{example}:unused_head", "--replicas", "2")
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert done.returncode == 3 and doc["steps_done"] == 1, done.stderr
    assert doc["error"].startswith("rank ") and "Expected to have finished reduction" in doc["error"]
    disagree = [f for f in doc["findings"] if f["kind"] == "replicas-disagree"]
    assert {f["subject"] for f in disagree} >= {"first.weight", "second.weight"}
    assert disagree[0]["variant"] == "unused-params-refused"
