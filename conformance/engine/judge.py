"""Judging one case: its observation checked against the spec, and a divergence explained by the
variant oracle under the framework's profile. Framework-neutral: it runs in the parent process
(or in-process for tests and `repro`), never touches a framework.
"""
from __future__ import annotations

import signal
import time
from contextlib import contextmanager

from ..kernel.lines import one_line
from ..oracle.known import KnownVariant
from ..oracle.reference import ReferenceRunner
from ..oracle.variants import VARIANTS
from ..results import CaseRecord, CheckRecord, Explanation, VariantRecord
from ..runners.base import Runner, Unsupported
from ..spec import Case, Instance
from .scenario import BadObservation, Observation, checked, observe, trainer_refusal
from .verdict import evaluate, failure_summary, observed, probes, unexplained

DEFAULT_TIMEOUT = 30.0  # seconds per case; a case's `timeout` or --timeout overrides it


class TimeLimit(BaseException):
    """Raised by `time_limit`; not an Exception, so no `except Exception` in the block swallows it."""


@contextmanager
def time_limit(seconds: float):
    """Raise TimeLimit inside the block once it has run `seconds` (wall clock). Uses SIGALRM, so
    only in the main thread; the previous handler is restored, and an outer timer re-armed with
    what it had left."""
    def expire(signum, frame):
        raise TimeLimit(f"ran past {seconds:g} s")

    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    # setitimer overflows on inf or ~1e12 s: past 1e8 s (three years) is as good as no limit
    outer, _ = signal.setitimer(signal.ITIMER_REAL, min(seconds, 1e8))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 1e-6))


def observe_safely(runner: Runner, case: Case) -> tuple[str, object]:
    """('ok', Observation) | ('unsupported', why) | ('error', one line)."""
    try:
        return "ok", observe(runner, case)
    except Unsupported as exc:
        return "unsupported", str(exc)
    except Exception as exc:
        return "error", one_line(exc)


# The oracle's outcomes by (case, variants) while `remembered_oracle()` is in force; None outside it.
_remembered: dict | None = None


@contextmanager
def remembered_oracle():
    """Within the block, the oracle runs once per case and set of variants: it is a pure function of the two, and
    --every-run judges the same instances in each of its runs, mostly under the same variants. Outside it (one
    run, `repro`, tests that patch the oracle) every call runs the oracle."""
    global _remembered
    outer, _remembered = _remembered, {}
    try:
        yield
    finally:
        _remembered = outer


def run_oracle(case: Case, variants=()) -> tuple[tuple[str, object], frozenset[str]]:
    """observe_safely of the oracle under `variants`, and the points of the semantics that run read. A
    remembered observation's arrays are read-only, so no caller can change what the next one gets."""
    key = None if _remembered is None else (case.model_dump_json(), frozenset(variants))
    if key is not None and key in _remembered:
        return _remembered[key]
    oracle = ReferenceRunner(variants=list(variants))
    outcome = observe_safely(oracle, case)
    answer = outcome, frozenset(oracle.sem.read)
    if key is not None and outcome[0] == "ok":
        _read_only(outcome[1])
        _remembered[key] = answer
    return answer


def _read_only(obs: Observation) -> None:
    for values in (obs.initial, *(d for s in obs.steps for d in (s.grads, s.values))):
        for array in values.values():
            if array is not None:
                array.flags.writeable = False


def explain(instance: Instance, obs: Observation, ref: Observation, profile: list[KnownVariant],
            limit: float = DEFAULT_TIMEOUT, ablate: bool = True) -> tuple[list[KnownVariant], str | None]:
    """Run the oracle under the profile's variants (`ref`: its observation without them). When it
    reproduces every checked observation of `obs`: (the variants it needed, None), found by dropping,
    one at a time, each variant whose removal keeps the match, so every one named is needed. Otherwise: ([], the first check it does not explain).
    All its oracle runs together get `limit` seconds, the case's own limit. Without `ablate`, only
    whether the whole profile reproduces `obs` is asked (and all of it is returned).
    A variant none of whose points the oracle read under the variants still needed is dropped without a run:
    the oracle without it would take the same path, so it is not needed."""
    def miss(variants) -> tuple[str | None, set[str]]:
        """(the first check the oracle under these variants does not explain, or None; the points it read)"""
        model, read = run_oracle(instance.case, [v.variant for v in variants])
        if model[0] != "ok":
            return f"the variant oracle failed: {model[1]}", read
        check = unexplained(instance, obs, model[1], ref)
        return (None if check is None else f"{check.check}: observed {check.observed}, variant oracle expects "
                f"otherwise"), read

    try:
        with time_limit(limit):
            first, read = miss(profile)
            if first is not None:
                return [], first
            needed = list(profile)
            if not ablate:
                return needed, None
            for variant in list(needed):
                trial = [v for v in needed if v is not variant]
                if not read & VARIANTS[variant.variant].changes.keys():
                    needed = trial
                    continue
                missed, trial_read = miss(trial)
                if missed is None:
                    needed, read = trial, trial_read
            return needed, None
    except TimeLimit:
        return [], f"the variant oracle timed out after {limit:g} s"


def judge(instance: Instance, outcome: tuple[str, object], reference: Observation | str,
          profile: list[KnownVariant], duration: float, limit: float = DEFAULT_TIMEOUT) -> CaseRecord:
    """The record of one instance: its checks against the spec, and for a divergence whether the
    oracle under the framework's profile (its variants for this version) reproduces it."""
    case = instance.case
    record = dict(id=instance.id, base_id=case.id, topic=instance.topic, title=case.title,
                  references=[str(r) for r in case.references], axes=instance.axes,
                  source=instance.source, duration_s=duration)
    kind, payload = outcome
    if isinstance(reference, str):  # a suite bug or limit, not a framework finding
        return CaseRecord(**record, verdict="error", reason=reference)
    if kind != "ok":
        return CaseRecord(**record, verdict=kind, reason=payload)
    try:
        observation = checked(payload, case, reference)
    except BadObservation as exc:
        return CaseRecord(**record, verdict="error", reason=f"bad observation: {exc}")
    checks = evaluate(instance, observation, reference)
    record["unobserved"] = [label if step is None else f"{label} @ step {step}"
                            for label, _, step, kind, _ in probes(instance) if not observed(kind, observation)]
    if not checks:  # nothing was compared: calling it conform would report a skipped case as passing
        why = f"this run cannot observe any of its checks ({'; '.join(record['unobserved'])})" \
            if record["unobserved"] else "no check of the case applies to this instance"
        return CaseRecord(**record, verdict="unsupported", reason=why)
    held = all(c.held for c in checks)
    checks_kept = [CheckRecord(**vars(c)) for c in checks]
    if held:  # the profile must not predict a divergence that did not happen
        _, miss = explain(instance, observation, reference, profile, limit, ablate=False) if profile else ([], None)
        return CaseRecord(**record, verdict="conform", unexplained=miss, checks=checks_kept)
    needed, miss = explain(instance, observation, reference, profile, limit)
    explanation = Explanation(variants=[VariantRecord.of(v) for v in needed]) if needed else None
    documented = explanation is not None and all(v.link is not None for v in needed)
    return CaseRecord(**record, verdict="divergence", reason=failure_summary(checks),
                      documented=explanation if documented else None,
                      explained_by=None if documented else explanation,
                      unexplained=miss, checks=checks_kept)


def refusal(instance: Instance, api: str) -> str | None:
    """Why the run's api cannot observe this instance at all, or None."""
    if api != "trainer":
        return None
    kinds = {kind for *_, kind, _ in probes(instance)}
    if kinds == {"grad"}:
        return "checks only gradients: a framework's trainer does not expose them"
    return trainer_refusal(instance.case)


def reference_of(case: Case, limit: float) -> Observation | str:
    """The oracle's observation, or the one-line reason there is none: it failed, or it ran past
    `limit` seconds (the case's own limit: a big case could otherwise run the oracle for minutes)."""
    try:
        with time_limit(limit):
            (kind, payload), _ = run_oracle(case)
    except TimeLimit:
        return f"reference oracle timed out after {limit:g} s"
    return payload if kind == "ok" else f"reference oracle failed: {payload}"


def run_instance(runner: Runner, instance: Instance, profile: list[KnownVariant]) -> CaseRecord:
    """In-process run of one instance (for in-memory adapters and tests: no crash isolation)."""
    start = time.perf_counter()
    limit = instance.case.timeout or DEFAULT_TIMEOUT
    if why := refusal(instance, runner.api):
        return judge(instance, ("unsupported", why), None, profile, 0.0)
    reference = reference_of(instance.case, limit)
    outcome = observe_safely(runner, instance.case)
    return judge(instance, outcome, reference, profile, time.perf_counter() - start, limit)
