"""The audit on mindspore: every example of examples/audit/mindspore/ gives exactly the findings its
expected.yaml lists, the probe leaves the step and the optimizer as they were, and the command line
keeps its promises on bad input."""
import json
import textwrap

import numpy as np
import pytest

import mindspore as ms
from mindspore import nn

import conformance
from conformance.auditor import AuditError, AuditInputError
from conformance.auditor.examples import EXAMPLES_DIR, build, expected, observed, run_cli

EXPECTED = expected("mindspore")


@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_each_example_gives_exactly_its_findings(target):
    report = conformance.audit(**build("mindspore", target), framework="mindspore")
    assert report.error is None
    assert observed(report) == EXPECTED[target]


def _state(built):
    """Every value the model and the optimizer hold (moments, global_step included), by name."""
    out = {f"model.{n}": p.asnumpy().copy() for n, p in built["model"].parameters_and_names()}
    out.update({f"optimizer.{p.name}": p.asnumpy().copy() for p in built["optimizer"].get_parameters()})
    return out


def test_the_audit_does_not_change_what_the_step_does():
    """The same seeded example (zero gradients decayed: the probe reads them), stepped with and without
    the audit, ends with the same weights and optimizer state; the optimizer is its own class again."""
    target = "seed1_unused_branch.py:build"
    plain, audited = build("mindspore", target), build("mindspore", target)
    start_plain, start_audited = _state(plain), _state(audited)
    assert start_plain.keys() == start_audited.keys()
    assert all(np.array_equal(start_plain[n], start_audited[n]) for n in start_plain)  # seeded alike
    for _ in range(3):
        plain["step"]()
    report = conformance.audit(**audited, framework="mindspore")
    assert all(obs.updates == 1 for obs in report.steps)
    end_plain, end_audited = _state(plain), _state(audited)
    for name in end_plain:
        assert np.array_equal(end_plain[name], end_audited[name]), name
    assert type(audited["optimizer"]) is nn.SGD  # the audit's class is gone
    assert vars(audited["optimizer"]).keys() == vars(plain["optimizer"]).keys()  # nothing left on the instance


def test_a_trainonestepcell_step_is_read_and_the_model_may_be_the_cell():
    """nn.TrainOneStepCell's construct calls the optimizer in PyNative: the probe reads that update,
    also when the TrainOneStepCell itself is handed over (its optimizer's state is left out)."""
    ms.set_seed(0)
    net = nn.SequentialCell([nn.Dense(4, 4), nn.BatchNorm1d(4), nn.Dense(4, 2)])
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9, weight_decay=1e-4)
    train_net = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), optimizer)
    x = ms.Tensor(np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32))
    t = ms.Tensor(np.zeros((8, 2), np.float32))

    def step():
        train_net.set_train()
        train_net(x, t)

    for model in (net, train_net):
        report = conformance.audit(model, optimizer, step, framework="mindspore")
        assert report.error is None and report.findings == []
        assert [obs.updates for obs in report.steps] == [1, 1, 1]
        assert {p.name for p in report.inventory.params} == {p.name for p in net.get_parameters()}
        assert all(s.params["0.weight"].grad == "nonzero" for s in report.steps)


def test_an_update_compiled_by_ms_jit_stops_the_audit_in_one_line():
    """Under @ms.jit the optimizer runs inside the graph, where nothing of the probe runs: its
    global_step says it updated, and the audit says why it cannot read that, not 'never updated'."""
    ms.set_seed(0)
    net = nn.Dense(4, 2)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)
    x, t = ms.Tensor(np.ones((2, 4), np.float32)), ms.Tensor(np.zeros((2, 2), np.float32))

    def forward_fn(x, t):
        return ((net(x) - t) ** 2).mean()

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

    @ms.jit
    def train_step(x, t):
        loss, grads = grad_fn(x, t)
        optimizer(grads)
        return loss

    with pytest.raises(AuditError, match=r"^step 1 of 3: the optimizer updated 1 time\(s\) "
                                         r"where the audit cannot read its gradients \(in a graph compiled by "
                                         r"@ms.jit or GRAPH_MODE"):
        conformance.audit(net, optimizer, lambda: train_step(x, t), framework="mindspore")
    assert type(optimizer) is nn.SGD


def test_graph_mode_is_refused(graph_mode):
    net = nn.Dense(4, 2)
    with pytest.raises(AuditInputError, match="GRAPH_MODE: the audit reads PyNative steps only"):
        conformance.audit(net, nn.SGD(net.trainable_params()), lambda: None, framework="mindspore")


def _audit(tmp_path, target, *options):
    return run_cli("mindspore", tmp_path, target, *options)


def test_findings_exit_1_and_the_json_says_them(tmp_path):
    done = _audit(tmp_path, str(EXAMPLES_DIR / "mindspore" / "seed2_plain_list_resnet.py:build"))
    assert done.returncode == 1, done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["schema"] == 1 and doc["steps_done"] == 3 and doc["error"] is None
    assert {f["kind"] for f in doc["findings"]} == {"unregistered", "mode-mismatch"}
    assert "block1.layers[0]" in done.stdout and "step 3/3" in done.stderr


TARGET = textwrap.dedent("""\
    import numpy as np
    import mindspore as ms
    from mindspore import nn

    def build():
        ms.set_context(mode=ms.PYNATIVE_MODE)
        net = nn.Dense(2, 2)
        optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1, weight_decay=0.1)
        grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, optimizer.parameters)
        calls = [0]

        def step():
            calls[0] += 1
            if calls[0] == 2:
                raise RuntimeError('out of memory')
            optimizer(grad_fn(ms.Tensor(np.ones((1, 2), np.float32)))[1])

        return {"model": net, "optimizer": optimizer, "step": step}
    """)


def test_a_failing_step_is_one_line_and_the_steps_before_it_are_kept(tmp_path):
    (tmp_path / "user.py").write_text(TARGET)
    done = _audit(tmp_path, f"{tmp_path / 'user.py'}:build", "--timeout", "120")
    assert done.returncode == 3, done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["steps_done"] == 1 and "step 2 of 3 raised RuntimeError: out of memory" in doc["error"]
    assert "\n" not in doc["error"] and "Traceback" not in done.stdout


@pytest.mark.parametrize("body, says", [
    ("return {'model': [1, 2], 'optimizer': None, 'step': print}", "model is a builtins.list, not a mindspore.nn.Cell"),
    ("m = nn.Dense(2, 2)\n    return {'model': m, 'optimizer': 'sgd', 'step': print}",
     "optimizer is a builtins.str, not a mindspore.nn.Optimizer"),
])
def test_a_model_or_optimizer_of_another_kind_is_refused_with_status_2(tmp_path, body, says):
    (tmp_path / "user.py").write_text(f"from mindspore import nn\n\ndef build():\n    {body}\n")
    done = _audit(tmp_path, f"{tmp_path / 'user.py'}:build")
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_replicas_the_audit_compares_the_workers_of_data_parallel(tmp_path):
    """examples/audit/mindspore/data_parallel_replicas.py under `--replicas 2`: each worker with msrun's variables and
    a scheduler as msrun starts one. DATA_PARALLEL keeps the parameters equal, and each worker's BatchNorm statistics
    are its own."""
    done = _audit(tmp_path, str(EXAMPLES_DIR / "mindspore" / "data_parallel_replicas.py") + ":build", "--replicas", "2")
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert done.returncode == 1 and doc["error"] is None and doc["steps_done"] == 3, done.stderr
    assert {(f["kind"], f["subject"]) for f in doc["findings"]} == {
        ("replica-statistics-differ", "norm.moving_mean"), ("replica-statistics-differ", "norm.moving_variance")}
