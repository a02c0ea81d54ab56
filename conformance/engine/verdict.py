"""Observed vs expected: each check of a case's `expect` list, then the case's verdict."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .scenario import Observation
from ..spec import DROPOUT_PROBE, Instance, defaults_of, expect_steps

VERDICTS = ("conform", "divergence", "error", "unsupported")


@dataclass
class Check:
    check: str
    expected: str
    observed: str
    held: bool


def grad_state(g) -> str:
    if g is None:
        return "none"
    return "zero" if not np.any(g) else "nonzero"


def _describe_grad(g) -> str:
    state = grad_state(g)
    return f"nonzero (max |g| {np.max(np.abs(g)):.2e})" if state == "nonzero" else state


def _compare(observed, expected, tol) -> tuple[bool, str]:
    if observed is None or expected is None:
        held = observed is None and expected is None
        got = "none" if observed is None else "an array"
        return held, f"{got}, reference has {'none' if expected is None else 'an array'}"
    observed, expected = np.asarray(observed, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if observed.shape != expected.shape:
        return False, f"shape {observed.shape}, reference {expected.shape}"
    diff = float(np.max(np.abs(observed - expected))) if observed.size else 0.0
    # NaN on both sides is the same outcome (a statistic poisoned, a skipped step's loss)
    held = bool(np.allclose(observed, expected, rtol=tol.rtol, atol=tol.atol, equal_nan=True))
    return held, f"max |observed - reference| {diff:.1e}"


def _same_draw(observed, expected) -> tuple[bool, str]:
    """Initial values a framework drew against the oracle's draw of a default initialization: the same
    constant, or a random draw with the same mean and standard deviation within six standard errors of
    two draws of that size (relative error of a normal sample's std is 1 / sqrt(2n); uniform and
    truncated draws vary less)."""
    o, e = np.asarray(observed, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if o.shape != e.shape:
        return False, f"shape {o.shape}, reference {e.shape}"
    shown = f"mean {o.mean():.3g}, std {o.std():.3g} (reference mean {e.mean():.3g}, std {e.std():.3g})"
    if not e.std() or not o.std():  # a constant (ones, zeros) on either side
        return bool(np.allclose(o, e, rtol=1e-6, atol=1e-7)), shown
    n = o.size
    held = abs(o.std() / e.std() - 1) <= 6 / np.sqrt(n) and abs(o.mean() - e.mean()) <= 6 * e.std() * np.sqrt(2 / n)
    return bool(held), shown


def _default_check(label: str, name: str, got, expected) -> Check:
    """A setting the framework chose: a bias present or not; a conv's padding per side, exactly; a dropout rate
    measured on DROPOUT_PROBE inputs, within six standard errors of that many draws; a number (or a pair) within 1e-5."""
    if name.endswith(".bias"):
        return Check(label, str(expected).lower(), str(got).lower(), got == expected)
    if name.endswith(".padding"):
        return Check(label, f"{expected:g} per side", f"{got:g} per side", got == expected)
    if name.endswith(".rate"):
        spread = 6 * np.sqrt(expected * (1 - expected) / DROPOUT_PROBE)
        return Check(label, f"{expected:g} (+-{spread:.1g}, measured on {DROPOUT_PROBE:,} inputs)", f"{got:.4f}",
                     abs(got - expected) <= spread)
    same = bool(np.allclose(got, expected, rtol=1e-5, atol=0))
    return Check(label, f"{expected:g}" if np.isscalar(expected) else str(expected),
                 f"{got:g}" if np.isscalar(got) else str(got), same)


def _applies(when: dict, axes: dict) -> bool:
    return all(axes.get(axis) in ([want] if isinstance(want, str) else want) for axis, want in when.items())


def _over_steps(label, expected, steps, one) -> Check:
    """Run `one(step) -> (held, observed)` at each step; report the first failure, if any."""
    where = f"step {steps[0]}" if len(steps) == 1 else (
        f"steps {steps[0]}-{steps[-1]}" if steps == list(range(steps[0], steps[-1] + 1)) else f"steps {steps}")
    for step in steps:
        held, observed = one(step)
        if not held:
            return Check(f"{label} @ {where}", expected, f"step {step}: {observed}" if len(steps) > 1 else observed, False)
    return Check(f"{label} @ {where}", expected, observed if len(steps) == 1 else "held at every step", True)


def _moved(now, before) -> tuple[bool, str]:
    if np.array_equal(now, before, equal_nan=True):
        return False, "unchanged"
    return True, f"changed by max {float(np.max(np.abs(now - before))):.1e}"


def _grad_class(g, want: str) -> str:
    """The state a grad check looks at: none_or_zero does not tell none from zero."""
    state = grad_state(g)
    return ("none_or_zero" if state in ("none", "zero") else state) if want == "none_or_zero" else state


def probes(instance: Instance):
    """Each check of the case that applies to this instance: (label, want, steps, kind, name)."""
    for exp in instance.case.expect:
        if not _applies(exp.when, instance.axes):
            continue
        for name, want in exp.grad.items():
            yield f"grad {name}", want, exp.step, "grad", name
        for name, want in exp.value.items():
            yield f"value {name}", want, exp.step, "value", name
        if exp.loss:
            yield "loss", "reference", exp.step, "loss", None
        for name in exp.agree:
            yield f"replicas agree on {name}", "agree", exp.step, "agree", name
        if exp.raises is not None:
            yield "raises", exp.raises, exp.step, "raises", None
        if exp.loss_differs:
            first, second = exp.loss_differs
            yield f"loss at step {first} differs from step {second}", "differs", None, "loss_differs", (first, second)
        for name, count in exp.in_optimizer.items():
            yield f"optimizer holds {name}", count, None, "in_optimizer", name
        for name, want in exp.trainable.items():
            yield f"trainable {name}", want, None, "trainable", name
        for name, want in exp.decayed.items():
            yield f"decayed {name}", want, None, "decayed", name
        for name in exp.initial:
            yield f"initial {name}", "reference", None, "initial", name
    for name in defaults_of(instance.case.model, instance.case.optimizer):  # a default is always checked
        yield f"default {name}", "reference", None, "default", name


def observed(kind: str, obs: Observation) -> bool:
    """Whether the run could observe a check of this kind (a trainer hides gradients; only a run
    that builds an update program shows which parameters it decays)."""
    return obs.grads_observed if kind == "grad" else obs.decayed is not None if kind == "decayed" else True


def _check(instance: Instance, obs: Observation, other: Observation, against_spec: bool,
           ref: Observation | None = None) -> list[Check]:
    """Every check of the case on `obs`. Against the spec, each check expects what the spec says and
    `reference` values come from `other` (the oracle). Otherwise every check expects what `other`
    (the oracle under variants) shows for it: the same grad state, the same moved / unchanged,
    values within tolerance, the same optimizer count and trainable flag. From the step where the
    variant oracle drew a dropout mask of its own (a variant left a dropout in train mode), its
    values are one random draw no framework shares: there a `reference` value check expects only
    what that draw implies, a value that differs from `ref` (the oracle without variants)."""
    checks, n, tol = [], len(obs.steps), instance.case.tolerance
    random_from = None if against_spec or other.random_from is None else other.random_from

    def compare(got, i, pick):
        if random_from is not None and i >= random_from:
            same, described = _compare(got, pick(ref.steps[i]), tol)
            return not same, f"{described} (the variant oracle's dropout mask is its own: it expects a difference)"
        return _compare(got, pick(other.steps[i]), tol)
    for label, want, spec_step, kind, name in probes(instance):
        if not observed(kind, obs):
            continue  # the record lists it as not observed
        if kind == "loss_differs":
            def differ(o, pair=name):
                a, b = (o.steps[i].loss for i in pair)
                return not np.isclose(a, b, rtol=tol.rtol, atol=tol.atol), abs(a - b)
            got, gap = differ(obs)
            expected = True if against_spec else differ(other)[0]
            show = lambda d: "differs" if d else "equal"
            checks.append(Check(label, show(expected), f"{show(got)} (|difference| {gap:.1e})", got == expected))
            continue
        if kind == "initial":
            held, shown = _same_draw(obs.initial[name], other.initial[name])
            checks.append(Check(label, "the reference's draw" if against_spec else "the variant oracle's draw",
                                shown, held))
            continue
        if kind == "default":
            checks.append(_default_check(label, name, obs.defaults[name], other.defaults[name]))
            continue
        if kind in ("in_optimizer", "trainable", "decayed"):
            read = {"in_optimizer": lambda o: o.optimizer_params.count(name),
                    "trainable": lambda o: o.trainable[name], "decayed": lambda o: o.decayed[name]}[kind]
            got, expected = read(obs), want if against_spec else read(other)
            show = (lambda x: f"{x}x") if kind == "in_optimizer" else (lambda x: str(x).lower())
            checks.append(Check(label, show(expected), show(got), got == expected))
            continue

        def one(i, kind=kind, name=name, want=want):
            if kind == "agree":
                split = name in obs.steps[i].disagree
                expected = True if against_spec else name not in other.steps[i].disagree
                return (not split) == expected, "replicas differ" if split else "every replica holds the same"
            if kind == "raises":
                raised = obs.steps[i].raised
                expected = want if against_spec else other.steps[i].raised is not None
                return (raised is not None) == expected, raised or "ran"
            if kind == "loss":
                return compare(np.float64(obs.steps[i].loss), i, lambda o: np.float64(o.loss))
            if kind == "grad":
                g = obs.steps[i].grads[name]
                if want == "reference":
                    return compare(g, i, lambda o: o.grads[name])
                expected = want if against_spec else _grad_class(other.steps[i].grads[name], want)
                return _grad_class(g, want) == expected, _describe_grad(g)
            now = obs.steps[i].values[name]
            if want == "reference":
                return compare(now, i, lambda o: o.values[name])
            moved, described = _moved(now, obs.before(i)[name])
            expected = (want == "changed") if against_spec else _moved(other.steps[i].values[name],
                                                                       other.before(i)[name])[0]
            return moved == expected, described

        shown = (("raises" if want else "runs") if kind == "raises" else want) if against_spec \
            else f"as the variant oracle ({want} check)"
        checks.append(_over_steps(label, shown, expect_steps(spec_step, n), one))
    return checks


def evaluate(instance: Instance, obs: Observation, ref: Observation) -> list[Check]:
    """The case's checks: the spec's expectations, `reference` values from the oracle's observation."""
    return _check(instance, obs, ref, against_spec=True)


def unexplained(instance: Instance, obs: Observation, model: Observation, ref: Observation) -> Check | None:
    """The first check on which `obs` differs from `model` (the oracle run under variants), or None
    when the model reproduces every checked observation. `ref` is the oracle's own observation."""
    return next((c for c in _check(instance, obs, model, against_spec=False, ref=ref) if not c.held), None)


def failure_summary(checks: list[Check]) -> str:
    failed = [c for c in checks if not c.held]
    first = failed[0]
    more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
    return f"{first.check}: expected {first.expected}, observed {first.observed}{more}"


def trace(instance: Instance, obs: Observation, ref: Observation) -> str:
    """Step-by-step account of one run beside the reference, then its checks (for `repro`)."""
    def grad(g):
        return grad_state(g) if g is None or not np.any(g) else f"{np.max(np.abs(g)):.2e}"

    def moved(now, before):
        return "-" if np.array_equal(now, before) else f"{np.max(np.abs(now - before)):.2e}"

    lines, steps = [], instance.case.steps
    path_of = [s.path for s in steps for _ in range(s.repeat)]
    lines.append(f"optimizer holds: {', '.join(obs.optimizer_params) or '(nothing)'}")
    for i, (o, r) in enumerate(zip(obs.steps, ref.steps)):
        lines.append(f"step {i}  path {'>'.join(path_of[i])}  loss {o.loss:.6g} (reference {r.loss:.6g})")
        for who, step in (("raised", o), ("reference raised", r)):
            if step.raised:
                lines.append(f"  {who} {step.raised}")
        lines.append(f"  {'parameter':24} {'|grad| max':>12} {'reference':>12} {'|moved| max':>12} {'reference':>12}")
        for name in o.values:
            lines.append(f"  {name:24} {grad(o.grads[name]):>12} {grad(r.grads[name]):>12} "
                         f"{moved(o.values[name], obs.before(i)[name]):>12} {moved(r.values[name], ref.before(i)[name]):>12}")
    lines.append("checks:")
    for c in evaluate(instance, obs, ref):
        lines.append(f"  {'ok  ' if c.held else 'FAIL'} {c.check}: expected {c.expected}, observed {c.observed}")
    return "\n".join(lines)
