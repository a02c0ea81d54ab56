"""Scenario engine and verdict logic, driven by in-memory adapters (no framework needed).

The mutants below are the oracle with one semantic changed. Each must be caught by the shipped
spec: that is what shows the spec's checks can fail.
"""
import numpy as np
import pytest

from conformance.execute import run_instance
from conformance.reference import ReferenceRunner
from conformance.runners.base import Unsupported
from conformance.schema import KnownDivergence, SPEC_DIR, load_spec

SPEC = load_spec(SPEC_DIR)


def verdicts(runner_cls, known=()):
    return {i.id: run_instance(runner_cls(), i, "1.0", list(known)) for i in SPEC}


def test_oracle_conforms_to_every_case():
    """The qualitative checks of the spec agree with the reference semantics."""
    bad = {k: r.reason for k, r in verdicts(ReferenceRunner).items() if r.verdict != "conform"}
    assert not bad


class ZeroFillingClear(ReferenceRunner):
    """Default clearing zero-fills gradients, as paddle's clear_grad() does."""
    def clear_grads(self, mode):
        super().clear_grads("zeros" if mode == "default" else mode)


class BiasedRunningVar(ReferenceRunner):
    def forward(self, path, x, target, train, backward):
        import conformance.reference as ref
        original = ref.batchnorm_running
        ref.batchnorm_running = lambda m, v, b, mom: ((1 - mom) * m + mom * b.mean(0), (1 - mom) * v + mom * b.var(0))
        try:
            return super().forward(path, x, target, train, backward)
        finally:
            ref.batchnorm_running = original


class CoupledAdamW(ReferenceRunner):
    def make_optimizer(self, optimizer):
        super().make_optimizer(optimizer.model_copy(update={"name": "adam"}) if optimizer.name == "adamw" else optimizer)


class ListsNotRegistered(ReferenceRunner):
    """Like torch: parameters of layers held in plain containers are not in the default collection."""
    def make_optimizer(self, optimizer):
        super().make_optimizer(optimizer)
        if optimizer.params == "default" and self.model.container.startswith("plain"):
            hidden = {f"{n}." for n in self.model.contained}
            self.opt_params = [p for p in self.opt_params if not p.startswith(tuple(hidden))]


class DecayEverything(ReferenceRunner):
    """Weight decay applied to parameters without gradient too (the Paddle Fluid seed)."""
    def update(self):
        for name in self.opt_params:
            if self.grads_[name] is None:
                self.grads_[name] = np.zeros_like(self.values_[name])
        super().update()


class DetachIgnored(ReferenceRunner):
    def build(self, model, values):
        super().build(model.model_copy(update={"detach_after": []}), values)


@pytest.mark.parametrize("mutant, must_catch", [
    (ZeroFillingClear, ["seed-1-decay-moves-unused-layer[sgd]", "unused-param-grad[default]",
                        "momentum-stops-with-gradient[momentum,default]"]),
    (BiasedRunningVar, ["bn-running-var-unbiased"]),
    (CoupledAdamW, ["decoupled-adamw-numerics", "per-param-decay-overrides[adamw]"]),
    (ListsNotRegistered, ["seed-2-plain-list-sublayers", "plain-containers-register[plain_list]"]),
    (DecayEverything, ["seed-4-bn-stats-not-regularized[sgd,all]", "decay-skips-frozen-param[sgd,default]",
                       "seed-1-decay-moves-unused-layer[sgd]"]),
    (DetachIgnored, ["seed-3-stop-gradient-vs-frozen[sgd,stop_gradient]", "detach-blocks-upstream"]),
])
def test_mutant_semantics_are_caught(mutant, must_catch):
    results = verdicts(mutant)
    for case_id in must_catch:
        assert results[case_id].verdict == "divergence", case_id
        assert results[case_id].documented is None
        assert any(not c.held for c in results[case_id].checks)


def test_variance_estimator_is_a_single_question():
    """Only the case that asks about it depends on the running-variance estimator."""
    diverging = {k for k, r in verdicts(BiasedRunningVar).items() if r.verdict != "conform"}
    assert diverging == {"bn-running-var-unbiased"}


def test_known_divergence_becomes_documented():
    entry = KnownDivergence(case="seed-2-plain-list-sublayers", versions=">=1", reason="why",
                            link="https://example.org/x")
    results = verdicts(ListsNotRegistered, [entry])
    record = results["seed-2-plain-list-sublayers"]
    assert record.verdict == "divergence" and record.documented.reason == "why"
    assert results["plain-containers-register[plain_list]"].documented is None
    old = run_instance(ListsNotRegistered(), next(i for i in SPEC if i.id == "seed-2-plain-list-sublayers"),
                       "0.5", [entry])
    assert old.documented is None  # outside the version range


def test_conform_case_is_never_marked_documented():
    entry = KnownDivergence(case="*", reason="blanket", link="https://example.org/x")
    record = verdicts(ReferenceRunner, [entry])["sgd-numerics"]
    assert record.verdict == "conform" and record.documented is None


class Refuses(ReferenceRunner):
    def make_optimizer(self, optimizer):
        raise Unsupported("no such optimizer here")


class Crashes(ReferenceRunner):
    def forward(self, *args, **kwargs):
        raise RuntimeError("kernel exploded\nsecond line")


class Nan(ReferenceRunner):
    def values(self):
        return {k: np.full_like(v, np.nan) for k, v in super().values().items()}


def test_unsupported_and_error_verdicts():
    instance = next(i for i in SPEC if i.id == "sgd-numerics")
    unsupported = run_instance(Refuses(), instance, "1", [])
    assert unsupported.verdict == "unsupported" and unsupported.reason == "no such optimizer here"
    error = run_instance(Crashes(), instance, "1", [])
    assert error.verdict == "error" and error.reason.startswith("RuntimeError: second line")
    assert "\n" not in error.reason
    nan = run_instance(Nan(), instance, "1", [])
    assert nan.verdict == "divergence"


def test_check_records_show_expected_and_observed():
    record = verdicts(ZeroFillingClear)["unused-param-grad[default]"]
    failed = [c for c in record.checks if not c.held]
    assert any(c.check == "grad a.weight @ step 1" and c.expected == "none" and c.observed == "zero"
               for c in failed)
    assert record.reason.startswith("grad a.weight @ step 1")
