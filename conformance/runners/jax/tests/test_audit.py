"""The audit on jax: every example of examples/audit/jax/ gives exactly the findings its expected.yaml
lists, the probe leaves the step and the optimizer as they were, a compiled update is refused in one
line, and the command line keeps its promises on bad input."""
import json
import textwrap

import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import conformance
from conformance.auditor import AuditError
from conformance.auditor.examples import EXAMPLES_DIR, build, expected, observed, run_cli

EXPECTED = expected("jax")


@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_each_example_gives_exactly_its_findings(target):
    report = conformance.audit(**build("jax", target), framework="jax")
    assert report.error is None
    assert observed(report) == EXPECTED[target]


def test_a_statistic_moved_by_its_gradient_says_how_far():
    """seed 4 with every Variable in the optimizer, in eval: the running statistics get the loss's
    gradient (bn-stats-differentiated) and move; the finding measures the move, gradient or not."""
    report = conformance.audit(**build("jax", "seed4_batchnorm_decay.py:all_state_in_eval"), framework="jax")
    moved = [f for f in report.findings if f.kind == "statistics-moved-in-eval"]
    assert {f.subject for f in moved} == {"layers.1.mean", "layers.1.var"}
    assert all(f.numbers["change"] > 0 for f in moved)


def _state(built):
    """Every value the model and the optimizer hold (opt_state, step included), by path."""
    out = {}
    for owner in ("model", "optimizer"):
        for path, leaf in nnx.to_flat_state(nnx.state(built[owner])):
            out[f"{owner}.{'.'.join(map(str, path))}"] = np.array(leaf.get_value())
    return out


def test_the_audit_does_not_change_what_the_step_does():
    """The same seeded example (zero gradients decayed: the probe reads them), stepped with and without
    the audit, ends with the same weights and optimizer state; the optimizer is its own class again."""
    target = "seed1_unused_branch.py:build"
    plain, audited = build("jax", target), build("jax", target)
    start_plain, start_audited = _state(plain), _state(audited)
    assert start_plain.keys() == start_audited.keys()
    assert all(np.array_equal(start_plain[n], start_audited[n]) for n in start_plain)  # seeded alike
    for _ in range(3):
        plain["step"]()
    report = conformance.audit(**audited, framework="jax")
    assert all(obs.updates == 1 for obs in report.steps)
    end_plain, end_audited = _state(plain), _state(audited)
    assert end_plain.keys() == end_audited.keys()
    for name in end_plain:
        assert np.array_equal(end_plain[name], end_audited[name]), name
    assert type(audited["optimizer"]) is nnx.Optimizer  # the audit's class is gone
    assert vars(audited["optimizer"]).keys() == vars(plain["optimizer"]).keys()  # nothing left on the instance


def test_the_inventory_reads_the_graph_and_the_optimizer_filter():
    """Params and BatchStats by graph path, nnx.List members as layers, what `wrt` holds, and the mode the
    layers share at the update (model.eval() reaches every module)."""
    rngs = nnx.Rngs(0)
    model = nnx.Sequential(nnx.Linear(4, 4, rngs=rngs), nnx.BatchNorm(4, rngs=rngs), nnx.Linear(4, 2, rngs=rngs))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    x, t = jnp.ones((8, 4)), jnp.zeros((8, 2))

    def step():
        model.eval()
        optimizer.update(model, nnx.grad(lambda m: jnp.mean((m(x) - t) ** 2))(model))

    report = conformance.audit(model, optimizer, step, framework="jax", steps=1)
    params = {p.name: p for p in report.inventory.params}
    assert set(params) == {"layers.0.kernel", "layers.0.bias", "layers.1.scale", "layers.1.bias",
                           "layers.1.mean", "layers.1.var", "layers.2.kernel", "layers.2.bias"}
    assert params["layers.1.mean"].statistic and not params["layers.1.mean"].in_optimizer
    assert params["layers.1.scale"].in_optimizer and params["layers.1.scale"].layer == "layers.1"
    assert {layer.path for layer in report.inventory.layers} >= {"layers", "layers.0", "layers.1", "layers.2"}
    assert report.steps[0].model_training is False and report.findings == []


def test_a_layer_outside_the_models_state_is_unregistered():
    """flax refuses a plain list of modules in __init__; one set past its checks afterwards is reached by
    the graph (and by model.train()) but not held by nnx.state: grad, the optimizer and checkpoints miss it."""
    class Net(nnx.Module):
        def __init__(self):
            self.fc = nnx.Linear(4, 2, rngs=nnx.Rngs(0))

        def __call__(self, x):
            return self.fc(self.extra[0](x))

    model = Net()
    object.__setattr__(model, "extra", [nnx.Linear(4, 4, rngs=nnx.Rngs(1))])
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    x = jnp.ones((2, 4))

    def step():
        optimizer.update(model, nnx.grad(lambda m: jnp.mean(m(x) ** 2))(model))

    report = conformance.audit(model, optimizer, step, framework="jax")
    assert report.kinds() == {"unregistered": ["extra.0"]}
    assert report.findings[0].detail == "2 parameters, none of them held by the optimizer"


def _jit_target():
    model = nnx.Linear(4, 2, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    x, t = jnp.ones((2, 4)), jnp.zeros((2, 2))

    @nnx.jit
    def train_step(model, optimizer, x, t):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - t) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    return model, optimizer, lambda: train_step(model, optimizer, x, t)


@pytest.mark.parametrize("traced_before", [False, True])
def test_an_update_compiled_by_nnx_jit_stops_the_audit_in_one_line(traced_before):
    """Under nnx.jit the update sees tracers (while tracing) or runs no Python (a trace reused): the
    optimizer's step count says it updated, and the audit says why it cannot read that."""
    model, optimizer, step = _jit_target()
    if traced_before:
        step()
    with pytest.raises(AuditError, match=r"^step 1 of 3: the optimizer updated 1 time\(s\) where the audit "
                                         r"cannot read its gradients \(in a function compiled by nnx.jit"):
        conformance.audit(model, optimizer, step, framework="jax")
    assert type(optimizer) is nnx.Optimizer
    step()  # the user's compiled step still runs after the audit
    assert int(optimizer.step[...]) == (3 if traced_before else 2)


def _audit(tmp_path, target, *options):
    return run_cli("jax", tmp_path, target, *options)


def test_findings_exit_1_and_the_json_says_them(tmp_path):
    done = _audit(tmp_path, str(EXAMPLES_DIR / "jax" / "seed1_unused_branch.py:build"))
    assert done.returncode == 1, done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["schema"] == 1 and doc["steps_done"] == 3 and doc["error"] is None
    assert {f["kind"] for f in doc["findings"]} == {"moved-without-gradient"}
    assert "conv2.kernel" in done.stdout and "step 3/3" in done.stderr


def test_seed_2_plain_list_is_refused_by_flax_with_status_2(tmp_path):
    """flax 0.12 raises while the model is built (a plain list of modules in a static attribute): the
    audit stops before any step, with one line and no traceback."""
    done = _audit(tmp_path, str(EXAMPLES_DIR / "jax" / "seed2_plain_list_resnet.py:build"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "build() raised ValueError" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr and done.stdout == ""


TARGET = textwrap.dedent("""\
    import jax.numpy as jnp
    import optax
    from flax import nnx

    def build():
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        optimizer = nnx.Optimizer(model, optax.chain(optax.add_decayed_weights(0.1), optax.sgd(0.1)), wrt=nnx.Param)
        calls = [0]

        def step():
            calls[0] += 1
            if calls[0] == 2:
                raise RuntimeError('out of memory')
            optimizer.update(model, nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(model))

        return {"model": model, "optimizer": optimizer, "step": step}
    """)


def test_a_failing_step_is_one_line_and_the_steps_before_it_are_kept(tmp_path):
    (tmp_path / "user.py").write_text(TARGET)
    done = _audit(tmp_path, f"{tmp_path / 'user.py'}:build", "--timeout", "120")
    assert done.returncode == 3, done.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["steps_done"] == 1 and "step 2 of 3 raised RuntimeError: out of memory" in doc["error"]
    assert "\n" not in doc["error"] and "Traceback" not in done.stdout


@pytest.mark.parametrize("body, says", [
    ("return {'model': [1, 2], 'optimizer': None, 'step': print}", "model is a builtins.list, not a flax.nnx.Module"),
    ("m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))\n    return {'model': m, 'optimizer': optax.sgd(0.1), 'step': print}",
     "not a flax.nnx.Optimizer"),
])
def test_a_model_or_optimizer_of_another_kind_is_refused_with_status_2(tmp_path, body, says):
    (tmp_path / "user.py").write_text(f"import optax\nfrom flax import nnx\n\ndef build():\n    {body}\n")
    done = _audit(tmp_path, f"{tmp_path / 'user.py'}:build")
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
