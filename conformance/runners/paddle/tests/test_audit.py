"""The audit on paddle: every example of examples/audit/paddle/ gives exactly the findings its
expected.yaml lists, the probe changes nothing the step does, and the command line keeps its promises
on bad input."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from .common import paddle

import conformance
from conformance.auditor.examples import EXAMPLES_DIR, build, expected, observed, run_cli
from conformance.runners.paddle.audit import PaddleProbe

EXPECTED = expected("paddle")


@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_each_example_gives_exactly_its_findings(target):
    report = conformance.audit(**build("paddle", target), framework="paddle")
    assert report.error is None
    assert observed(report) == EXPECTED[target]


@pytest.mark.parametrize("target", ["seed1_unused_branch.py:build", "seed1_unused_branch.py:as_reported"])
def test_the_audit_does_not_change_what_the_step_does(target):
    """The same seeded example, stepped with and without the audit (through opt.step() in build,
    opt.minimize(loss) as reported), ends with the same weights; the optimizer's instance attributes
    are what they were."""
    plain, audited = build("paddle", target), build("paddle", target)
    for _ in range(3):
        plain["step"]()
    attributes = set(vars(audited["optimizer"]))
    report = conformance.audit(**audited, framework="paddle")
    assert all(obs.updates == 1 for obs in report.steps)  # each step's update was seen, once
    a, b = plain["model"].state_dict(), audited["model"].state_dict()
    assert list(a) == list(b)
    for name in a:
        assert np.array_equal(a[name].numpy(), b[name].numpy()), name
    assert set(vars(audited["optimizer"])) == attributes  # step and minimize are the class's again
    assert "step" not in vars(audited["optimizer"]) and "minimize" not in vars(audited["optimizer"])


def test_uninstall_puts_back_what_the_user_had_set_on_the_instance():
    model = paddle.nn.Linear(2, 2)
    optimizer = paddle.optimizer.SGD(0.1, parameters=model.parameters())
    calls = []

    def own_step():
        calls.append(1)
        type(optimizer).step(optimizer)

    optimizer.step = own_step
    probe = PaddleProbe(model, optimizer)
    probe.install()
    model(paddle.ones([1, 2])).sum().backward()
    optimizer.step()
    probe.uninstall()
    assert vars(optimizer)["step"] is own_step and "minimize" not in vars(optimizer)
    assert calls == [1] and len(probe.take_updates()) == 1


def test_an_exclusion_written_against_structured_names_exempts_nothing():
    """AdamW passes apply_decay_param_fun each Parameter's own name (linear_0.b_0), never out.bias."""
    paddle.seed(0)
    model = paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.LayerNorm(4), paddle.nn.Linear(4, 2))
    optimizer = paddle.optimizer.AdamW(1e-3, parameters=model.parameters(), weight_decay=0.01,
                                       apply_decay_param_fun=lambda name: not name.endswith("bias"))
    x = paddle.randn([8, 4])

    def step():
        model(x).pow(2).mean().backward()
        optimizer.step()
        optimizer.clear_grad()

    report = conformance.audit(model, optimizer, step, framework="paddle")
    assert report.kinds() == {"decay-exclusion-ineffective": ["AdamW(apply_decay_param_fun=test_an_exclusion_"
                                                              "written_against_structured_names_exempts_nothing"
                                                              ".<locals>.<lambda>)"]}
    assert {p.name: p.decayed for p in report.inventory.params}["2.bias"] is True


def _audit(tmp_path, target, *options):
    return run_cli("paddle", tmp_path, target, *options)


def test_findings_exit_1_and_the_json_says_them(tmp_path):
    done = _audit(tmp_path, str(EXAMPLES_DIR / "paddle" / "seed2_plain_list_resnet.py:build"))
    assert done.returncode == 1, done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["schema"] == 1 and doc["steps_done"] == 3 and doc["error"] is None
    assert {f["kind"] for f in doc["findings"]} == {"unregistered", "statistics-in-optimizer"}
    assert "block1.layers[0]" in done.stdout and "step 3/3" in done.stderr


TARGET = textwrap.dedent("""\
    import paddle

    def build():
        model = paddle.nn.Linear(2, 2)
        optimizer = paddle.optimizer.SGD(0.1, parameters=model.parameters(), weight_decay=0.1)
        calls = [0]

        def step():
            calls[0] += 1
            if calls[0] == 2:
                raise RuntimeError('out of memory')
            model(paddle.ones([1, 2])).sum().backward()
            optimizer.step()
            optimizer.clear_grad()

        return {"model": model, "optimizer": optimizer, "step": step}
    """)


def test_a_step_that_raises_is_exit_3_and_the_steps_before_it_are_kept(tmp_path):
    (tmp_path / "user.py").write_text(TARGET)
    done = _audit(tmp_path, f"{tmp_path / 'user.py'}:build")
    assert done.returncode == 3, done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["steps_done"] == 1 and "step 2 of 3 raised RuntimeError: out of memory" in doc["error"]
    assert "\n" not in doc["error"] and "Traceback" not in done.stdout


@pytest.mark.parametrize("body, says", [
    ("return {'model': [1, 2], 'optimizer': None, 'step': print}", "model is a builtins.list, not a paddle.nn.Layer"),
    ("m = paddle.nn.Linear(2, 2)\n    return {'model': m, 'optimizer': 'sgd', 'step': print}",
     "optimizer is a builtins.str, not a paddle.optimizer.Optimizer"),
])
def test_a_model_or_optimizer_of_another_kind_is_refused_with_exit_2(tmp_path, body, says):
    (tmp_path / "user.py").write_text(f"import paddle\n\ndef build():\n    {body}\n")
    done = _audit(tmp_path, f"{tmp_path / 'user.py'}:build")
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr and "Traceback" not in done.stdout + done.stderr


def test_the_readme_shows_the_audit_of_seed_2_as_the_command_prints_it():
    import re
    root = EXAMPLES_DIR.parents[1]
    block = re.search(r"<!-- audit-seed2:.*?-->\n    \$ (.*?)\n(.*?)\n<!-- /audit-seed2 -->",
                      (root / "README.md").read_text(), re.S)
    command, shown = block[1], block[2]
    done = subprocess.run([sys.executable, "-m", *command.split()[2:]], capture_output=True, text=True,
                          timeout=300, cwd=root)
    assert done.returncode == 1, done.stderr
    printed = "\n".join("    " + line if line else "" for line in done.stdout.rstrip("\n").splitlines())
    version = re.compile(r"\(paddle [^,]+,")  # README shows the newest paddle; paddle26 runs this too
    assert version.sub("(paddle V,", shown) == version.sub("(paddle V,", printed), \
        "README's audit of seed 2 is stale: run the command and put its output there"


def test_replicas_the_audit_compares_the_ranks_of_data_parallel(tmp_path):
    """examples/audit/paddle/data_parallel_replicas.py under `--replicas 2`, each rank with the launcher's variables:
    DataParallel keeps the parameters equal, and each rank's BatchNorm statistics are its own."""
    done = run_cli("paddle", tmp_path, str(EXAMPLES_DIR / "paddle" / "data_parallel_replicas.py") + ":build",
                   "--replicas", "2")
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert done.returncode == 1 and doc["error"] is None and doc["steps_done"] == 3, done.stderr
    assert {(f["kind"], f["subject"]) for f in doc["findings"] if f["kind"].startswith("replica")} == {
        ("replica-statistics-differ", "norm._mean"), ("replica-statistics-differ", "norm._variance")}
