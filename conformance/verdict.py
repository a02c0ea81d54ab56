"""Observed vs expected: each check of a case's `expect` list, then the case's verdict."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .scenario import Observation
from .schema import Instance, KnownDivergence

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
    held = bool(np.allclose(observed, expected, rtol=tol.rtol, atol=tol.atol))
    return held, f"max |observed - reference| {diff:.1e}"


def _steps(spec_step, n: int) -> list[int]:
    if spec_step == "all":
        return list(range(n))
    if spec_step == "last":
        return [n - 1]
    return [s % n for s in (spec_step if isinstance(spec_step, list) else [spec_step])]


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


def evaluate(instance: Instance, obs: Observation, ref: Observation) -> list[Check]:
    case, checks = instance.case, []
    n = len(obs.steps)
    for exp in case.expect:
        if not _applies(exp.when, instance.axes):
            continue
        steps = _steps(exp.step, n) if exp.step is not None else []
        for name, want in exp.grad.items():
            def one(i, name=name, want=want):
                g = obs.steps[i].grads[name]
                if want == "reference":
                    return _compare(g, ref.steps[i].grads[name], case.tolerance)
                state = grad_state(g)
                held = state in ("none", "zero") if want == "none_or_zero" else state == want
                return held, _describe_grad(g)
            checks.append(_over_steps(f"grad {name}", want, steps, one))
        for name, want in exp.value.items():
            def one(i, name=name, want=want):
                now = obs.steps[i].values[name]
                if want == "reference":
                    return _compare(now, ref.steps[i].values[name], case.tolerance)
                delta = float(np.max(np.abs(now - obs.before(i)[name])))
                moved = not np.array_equal(now, obs.before(i)[name])
                return moved == (want == "changed"), f"changed by max {delta:.1e}" if moved else "unchanged"
            checks.append(_over_steps(f"value {name}", want, steps, one))
        if exp.loss:
            def one(i):
                return _compare(np.float64(obs.steps[i].loss), np.float64(ref.steps[i].loss), case.tolerance)
            checks.append(_over_steps("loss", "reference", steps, one))
        for name, count in exp.in_optimizer.items():
            seen = obs.optimizer_params.count(name)
            checks.append(Check(f"optimizer holds {name}", f"{count}x", f"{seen}x", seen == count))
        for name, want in exp.trainable.items():
            got = obs.trainable[name]
            checks.append(Check(f"trainable {name}", str(want).lower(), str(got).lower(), got == want))
    return checks


def documented_by(instance: Instance, version: str, known: list[KnownDivergence],
                  checks: list[Check]) -> KnownDivergence | None:
    failed = [c.check for c in checks if not c.held]
    return next((entry for entry in known if entry.matches(instance.id, version, failed, instance.axes)), None)


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
        lines.append(f"  {'parameter':24} {'|grad| max':>12} {'reference':>12} {'|moved| max':>12} {'reference':>12}")
        for name in o.values:
            lines.append(f"  {name:24} {grad(o.grads[name]):>12} {grad(r.grads[name]):>12} "
                         f"{moved(o.values[name], obs.before(i)[name]):>12} {moved(r.values[name], ref.before(i)[name]):>12}")
    lines.append("checks:")
    for c in evaluate(instance, obs, ref):
        lines.append(f"  {'ok  ' if c.held else 'FAIL'} {c.check}: expected {c.expected}, observed {c.observed}")
    return "\n".join(lines)
