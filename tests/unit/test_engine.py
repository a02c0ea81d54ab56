"""Scenario engine and verdict logic, driven by in-memory adapters (no framework needed).

The mutants below are the oracle with one semantic changed. Each must be caught by the shipped
spec: that is what shows the spec's checks can fail. The oracle under named variants stands in for a
framework whose profile is known exactly: that is how the documented / undocumented labels are tested.
"""
import numpy as np
import pytest

from conformance.engine.judge import run_instance
from conformance.oracle.reference import ReferenceRunner
from conformance.runners.base import Unsupported
from conformance.oracle.known import KnownVariant
from conformance.oracle.known import profile as profile_of
from conformance.run import Run
from conformance.spec import SPEC_DIR, load_spec

SPEC = load_spec(SPEC_DIR)


def verdicts(make_runner, profile=(), only=None):
    """Each instance's record (those named in `only`, or every one) with a fresh runner."""
    return {i.id: run_instance(make_runner(), i, list(profile)) for i in SPEC if only is None or i.id in only}


def with_variants(*names):
    """An in-memory framework that behaves exactly as the oracle under these variants."""
    return lambda: ReferenceRunner(variants=names)


def known(name, link="https://example.org/doc", versions=""):
    return KnownVariant(variant=name, versions=versions, reason=f"why {name}", link=link)


def test_oracle_conforms_to_every_case():
    """The qualitative checks of the spec agree with the reference semantics."""
    bad = {k: r.reason for k, r in verdicts(ReferenceRunner).items() if r.verdict != "conform"}
    assert not bad


class CoupledAdamW(ReferenceRunner):
    def make_optimizer(self, optimizer):
        super().make_optimizer(optimizer.model_copy(update={"name": "adam"}) if optimizer.name == "adamw" else optimizer)


class DecayEverything(ReferenceRunner):
    """Weight decay applied to parameters without gradient too (the Paddle Fluid seed)."""
    def update(self):
        for name in self.opt_params:
            if self.grads_[name] is None:
                self.grads_[name] = np.zeros_like(self.values_[name])
        super().update()


class IgnoresNoDecay(ReferenceRunner):
    def make_optimizer(self, optimizer):
        super().make_optimizer(optimizer.model_copy(update={"no_decay": []}))


class ClipsAfterL2(ReferenceRunner):
    """Adds L2 to the gradient, then clips the sum."""
    def update(self):
        coefficient = self.opt.weight_decay if self.opt.name != "adamw" else 0.0
        for name in self.opt_params:
            if self.grads_[name] is not None:
                self.grads_[name] = self.grads_[name] + coefficient * self.values_[name]
        saved, self.opt = self.opt, self.opt.model_copy(update={"weight_decay": 0.0 if self.opt.name != "adamw" else self.opt.weight_decay})
        super().update()
        self.opt = saved


class GlobalForPerVariable(ReferenceRunner):
    def make_optimizer(self, optimizer):
        if optimizer.clip_norm is not None:
            optimizer = optimizer.model_copy(update={"clip_norm": None, "clip_global_norm": optimizer.clip_norm})
        super().make_optimizer(optimizer)


class ClipsEverything(ReferenceRunner):
    def make_optimizer(self, optimizer):
        super().make_optimizer(optimizer.model_copy(update={"no_clip": []}))


class LrIgnored(ReferenceRunner):
    def set_lr(self, lr):
        pass


class FreezeIgnored(ReferenceRunner):
    def set_trainable(self, names, trainable):
        if trainable:
            super().set_trainable(names, trainable)


class UnfreezeIgnored(ReferenceRunner):
    def set_trainable(self, names, trainable):
        if not trainable:
            super().set_trainable(names, trainable)


class LayerNormWithoutAffineGrad(ReferenceRunner):
    """Treats LayerNorm's output as not depending on its weight (a broken backward)."""
    def _accumulate(self, name, g):
        if not (self.model.layers[name.split(".")[0]].layernorm and name.endswith(".weight")):
            super()._accumulate(name, g)


class LazyEmbeddingRows(ReferenceRunner):
    """Updates only the embedding rows looked up this step (a sparse update)."""
    def forward(self, path, x, target, train, backward):
        self.looked_up = set(np.asarray(x, dtype=np.int64).tolist()) if self.model.layers[path[0]].embedding else None
        return super().forward(path, x, target, train, backward)

    def update(self):
        before = {n: v.copy() for n, v in self.values_.items()}
        super().update()
        if self.looked_up is not None:
            for name in self.values_:
                if self.model.layers[name.split(".")[0]].embedding:
                    rest = [r for r in range(len(before[name])) if r not in self.looked_up]
                    self.values_[name][rest] = before[name][rest]


class PaddingRowTrained(ReferenceRunner):
    def build(self, model, values):
        layers = {n: layer.model_copy(update={"padding_idx": None}) for n, layer in model.layers.items()}
        super().build(model.model_copy(update={"layers": layers}), values)


class DropoutNeverOn(ReferenceRunner):
    def _train_mode(self, layer, train):
        return False if self.model.spec(layer).dropout else super()._train_mode(layer, train)


class DropoutAlwaysOn(ReferenceRunner):
    def _train_mode(self, layer, train):
        return True if self.model.spec(layer).dropout else super()._train_mode(layer, train)


class DetachIgnored(ReferenceRunner):
    def build(self, model, values):
        super().build(model.model_copy(update={"detach_after": []}), values)


@pytest.mark.parametrize("mutant, must_catch", [
    (with_variants("clear-default-zero-fills"), ["seed-1-decay-moves-unused-layer[sgd]", "unused-param-grad[default]",
                        "momentum-stops-with-gradient[momentum,default]"]),
    (with_variants("bn-running-var-biased"), ["bn-running-var-unbiased"]),
    (CoupledAdamW, ["decoupled-adamw-numerics", "per-param-decay-overrides[adamw]"]),
    (with_variants("plain-containers-unregistered"), ["seed-2-plain-list-sublayers", "plain-containers-register[plain_list]"]),
    (DecayEverything, ["seed-4-bn-stats-not-regularized[sgd,all]", "decay-skips-frozen-param[sgd,default]",
                       "seed-1-decay-moves-unused-layer[sgd]"]),
    (DetachIgnored, ["seed-3-stop-gradient-vs-frozen[sgd,stop_gradient]", "detach-blocks-upstream"]),
    (with_variants("compiled-grad-keeps-first-mode"), ["seed-4-bn-stats-not-regularized[sgd,default]"]),
    (with_variants("frozen-bn-runs-inference"), ["frozen-bn-stats-move[layer]", "frozen-bn-normalises-with-batch[layer]",
                                                 "frozen-bn-grad-upstream[layer]", "freeze-bn-mid-training"]),
    (with_variants("bn-default-momentum-0.99"), ["default-bn-momentum"]),
    (with_variants("norm-default-eps-1e-3"), ["default-bn-eps", "default-layernorm-eps"]),
    (with_variants("layernorm-default-eps-1e-7"), ["default-layernorm-eps"]),
    (with_variants("adam-default-eps-1e-7"), ["default-adam-eps[adam]", "default-adamw-step"]),
    (with_variants("adamw-default-decay-0"), ["default-adamw-weight-decay", "default-adamw-step"]),
    (with_variants("adamw-default-decay-0.004"), ["default-adamw-weight-decay"]),
    (with_variants("no-decay-for-beta-gamma"), ["layernorm-affine-decayed[sgd]"]),
    (IgnoresNoDecay, ["no-decay-biases[sgd]", "no-decay-norm-affine[adamw]", "no-decay-everything[adamw]"]),
    (ClipsAfterL2, ["clip-before-l2[sgd]"]),
    (GlobalForPerVariable, ["clip-per-variable[sgd]", "clip-excluded-param[per_variable]"]),
    (ClipsEverything, ["clip-excluded-param[global]"]),
    (LrIgnored, ["lr-change[sgd]", "decoupled-decay-scales-with-lr", "lr-zero-keeps-values-not-state[momentum]"]),
    (FreezeIgnored, ["freeze-after-optimizer[sgd,default]", "refreeze-keeps-state[momentum]"]),
    (UnfreezeIgnored, ["unfreeze-resumes[sgd,default]"]),
    (LayerNormWithoutAffineGrad, ["layernorm-grads", "layernorm-training-numerics[sgd]"]),
    (LazyEmbeddingRows, ["embedding-rows-not-looked-up-decay[sgd]", "embedding-rows-not-looked-up-state[momentum]"]),
    (PaddingRowTrained, ["embedding-padding-row[sgd]"]),
    (with_variants("plain-containers-unregistered"), ["seed-2-conv-blocks-in-plain-list[plain_list]"]),
    (with_variants("clear-default-zero-fills"), ["seed-1-conv-decay-moves-unused-layer[sgd]"]),
    (DetachIgnored, ["seed-3-conv-stop-gradient-vs-frozen[stop_gradient]"]),
    (with_variants("plain-contained-layers-stay-train"), ["dropout-in-container-follows-eval[plain_list]"]),
    (DropoutNeverOn, ["dropout-on-in-train"]),
    (DropoutAlwaysOn, ["dropout-off-in-eval", "dropout-in-container-follows-eval[framework_list]"]),
    (with_variants("decay-filter-sees-gamma-beta"), ["decay-name-filter-bias[sgd]", "decay-name-filter-bert[adamw]",
                                                     "decay-name-filter-gamma-beta[momentum]"]),
    (with_variants("decay-fun-sees-generated-names"), ["decay-name-filter-bias[adamw]", "decay-name-filter-layer-name[adamw]"]),
    (with_variants("decay-filter-sees-weight-names-only"), ["decay-name-filter-layer-name[sgd]"]),
    (with_variants("linear-init-xavier-uniform"), ["init-default-linear"]),
    (with_variants("bias-init-zero"), ["init-default-linear", "init-default-conv"]),
    (with_variants("conv-init-he-normal"), ["init-default-conv"]),
    (with_variants("embedding-init-normal-0.01"), ["init-default-embedding"]),
    (with_variants("bn-one-value-skipped"), ["bn-train-batch-of-one"]),
    (with_variants("bn-one-value-normalised"), ["bn-train-batch-of-one"]),
    (with_variants("nonscalar-backward-sums"), ["backward-per-sample-loss[sgd]", "backward-per-sample-loss[adam]"]),
])
def test_mutant_semantics_are_caught(mutant, must_catch):
    results = verdicts(mutant, only=must_catch)
    for case_id in must_catch:
        assert results[case_id].verdict == "divergence", case_id
        assert results[case_id].documented is None
        assert any(not c.held for c in results[case_id].checks)


def test_variance_estimator_is_a_single_question():
    """Only the case that asks about it depends on the running-variance estimator."""
    diverging = {k for k, r in verdicts(with_variants("bn-running-var-biased")).items() if r.verdict != "conform"}
    assert diverging == {"bn-running-var-unbiased"}


def test_reproduced_divergence_is_documented_with_the_variants_it_needed():
    framework = with_variants("clear-default-zero-fills", "bn-running-var-biased")
    profile = [known("clear-default-zero-fills"), known("bn-running-var-biased"), known("adam-epsilon-hat")]
    results = verdicts(framework, profile)
    record = results["seed-1-decay-moves-unused-layer[sgd]"]
    assert record.verdict == "divergence" and record.unexplained is None
    assert [v.name for v in record.documented.variants] == ["clear-default-zero-fills"]  # ablation
    assert [v.name for v in results["bn-running-var-unbiased"].documented.variants] == ["bn-running-var-biased"]
    divergent = [r for r in results.values() if r.verdict == "divergence"]
    assert divergent and all(r.documented and not r.explained_by for r in divergent)


def test_version_range_limits_the_profile():
    framework = with_variants("plain-containers-unregistered")
    instance = next(i for i in SPEC if i.id == "seed-2-plain-list-sublayers")
    profile = profile_of([known("plain-containers-unregistered", versions=">=1")], Run("fw", "0.5"))
    record = run_instance(framework(), instance, profile)
    assert record.verdict == "divergence" and record.documented is None
    assert record.unexplained.startswith("optimizer holds") or record.unexplained.startswith("value")


def test_variant_without_link_explains_but_does_not_document():
    framework = with_variants("adam-shared-step-counter")
    record = verdicts(framework, [known("adam-shared-step-counter", link=None)])["state-resumes-after-gap[adam,none]"]
    assert record.verdict == "divergence" and record.documented is None
    assert [v.name for v in record.explained_by.variants] == ["adam-shared-step-counter"]
    assert record.explained_by.variants[0].link is None


class DecaysFrozenUnderAdamW(ReferenceRunner):
    """A new mechanism: AdamW's decoupled decay also moves frozen parameters it holds."""
    def update(self):
        frozen = {n: self.values_[n].copy() for n in self.frozen if n in self.opt_params}
        super().update()
        if self.opt.name == "adamw":
            for name, value in frozen.items():
                self.values_[name] = value * (1 - self.opt.lr * self.opt.weight_decay)


def test_a_new_mechanism_stays_undocumented_beside_a_profile_that_explains_others():
    """The profile holds 'no bias correction'; the adapter also decays frozen parameters under AdamW.
    Only the divergences that need nothing but the profile are documented."""
    class Framework(DecaysFrozenUnderAdamW):
        def __init__(self):
            super().__init__(variants=["adamw-no-bias-correction"])
    results = verdicts(Framework, [known("adamw-no-bias-correction")])
    frozen_adamw = results["decay-skips-frozen-param[adamw,default]"]
    assert frozen_adamw.verdict == "divergence" and frozen_adamw.documented is None
    assert frozen_adamw.explained_by is None and "a.weight" in frozen_adamw.unexplained
    assert results["adam-numerics[adamw]"].documented.variants[0].name == "adamw-no-bias-correction"


def test_removing_a_variant_turns_exactly_its_divergences_undocumented():
    names = ["clear-default-zero-fills", "plain-containers-unregistered", "plain-contained-layers-stay-train",
             "bn-running-var-biased", "bn-stats-in-parameters"]
    framework = with_variants(*names)
    full = verdicts(framework, [known(n) for n in names])
    assert all(r.documented for r in full.values() if r.verdict == "divergence")
    for removed in names:
        fewer = verdicts(framework, [known(n) for n in names if n != removed])
        needed_it = {i for i, r in full.items() if r.documented and removed in [v.name for v in r.documented.variants]}
        assert needed_it, removed
        undocumented = {i for i, r in fewer.items() if r.verdict == "divergence" and not r.documented}
        assert undocumented == needed_it, removed


def test_profile_that_predicts_a_missing_divergence_is_flagged_on_conform_cases():
    record = verdicts(ReferenceRunner, [known("clear-default-zero-fills")])["unused-param-grad[default]"]
    assert record.verdict == "conform" and record.documented is None
    assert record.unexplained.startswith("grad a.weight")


def test_unknown_variant_name_is_refused():
    with pytest.raises(ValueError, match="unknown variants: no-such"):
        ReferenceRunner(variants=["no-such"])


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
    unsupported = run_instance(Refuses(), instance, [])
    assert unsupported.verdict == "unsupported" and unsupported.reason == "no such optimizer here"
    error = run_instance(Crashes(), instance, [])
    assert error.verdict == "error" and error.reason.startswith("RuntimeError: second line")
    assert "\n" not in error.reason
    nan = run_instance(Nan(), instance, [])
    assert nan.verdict == "divergence"


class RaisesEveryForward(ReferenceRunner):
    def forward(self, path, x, target, train, backward):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls > 0:
            raise RuntimeError("refused\nsecond line")
        return super().forward(path, x, target, train, backward)


def test_an_error_is_an_observation_only_at_a_step_a_raises_check_looks_at():
    """bn-train-batch-of-one lets step 0 raise: there the error is recorded and the schedule goes on
    (step 1 raises again, where nothing lets it: that is the instance's error)."""
    instance = next(i for i in SPEC if i.id == "bn-train-batch-of-one")
    record = run_instance(RaisesEveryForward(), instance, [])
    assert record.verdict == "error" and record.reason.startswith("RuntimeError: second line"), record.reason
    reference = run_instance(ReferenceRunner(), instance, [])
    assert reference.verdict == "conform"
    assert any(c.check == "raises @ step 0" and c.observed.startswith("ValueError: Expected more than 1 value")
               for c in reference.checks)


def test_check_records_show_expected_and_observed():
    record = verdicts(with_variants("clear-default-zero-fills"))["unused-param-grad[default]"]
    failed = [c for c in record.checks if not c.held]
    assert any(c.check == "grad a.weight @ step 1" and c.expected == "none" and c.observed == "zero"
               for c in failed)
    assert record.reason.startswith("grad a.weight @ step 1")


# ---------------------------------------------------------------- which parameters an update program decays
class DecaysStatistics(ReferenceRunner):
    """A program that regularizes the BatchNorm statistics (the Fluid report), read as an observation."""
    def decayed(self):
        return {**super().decayed(), "bn.running_mean": True}


class NoProgram(ReferenceRunner):
    """Eager code: no update program to read."""
    def decayed(self):
        return None


SEED4 = next(i for i in SPEC if i.id == "seed-4-bn-stats-not-regularized[sgd,all]")


def test_a_regularization_op_on_a_statistic_is_a_divergence():
    record = run_instance(DecaysStatistics(), SEED4, [])
    assert record.verdict == "divergence"
    assert [c.check for c in record.checks if not c.held] == ["decayed bn.running_mean"]


def test_without_a_program_the_decay_checks_are_listed_as_not_observed():
    record = run_instance(NoProgram(), SEED4, [])
    assert record.verdict == "conform"
    assert record.unobserved == ["decayed bn.running_mean", "decayed bn.running_var", "decayed fc.weight",
                                 "decayed bn.weight"]
    assert not any(c.check.startswith("decayed") for c in record.checks)


def test_an_instance_with_nothing_observable_is_unsupported_not_conform():
    only_decay = [e for e in SEED4.case.expect if e.decayed]
    instance = SEED4.model_copy(update={"case": SEED4.case.model_copy(update={"expect": only_decay})})
    record = run_instance(NoProgram(), instance, [])
    assert record.verdict == "unsupported" and record.reason.startswith("this run cannot observe any of its checks (decayed")
    assert run_instance(ReferenceRunner(), instance, []).verdict == "conform"


@pytest.mark.parametrize("decayed, message", [
    ([], "decayed is list, not a dict"),
    ({"fc.weight": 1}, "decayed lacks"),
])
def test_a_malformed_decay_observation_is_an_error(decayed, message):
    class Lying(ReferenceRunner):
        def decayed(self):
            return decayed
    record = run_instance(Lying(), SEED4, [])
    assert record.verdict == "error" and message in record.reason


class OwnDropoutMask(ReferenceRunner):
    """A framework whose dropout in a plain list stays in train mode, drawing masks of its own."""
    def __init__(self):
        super().__init__(variants=("plain-contained-layers-stay-train",))

    def build(self, model, values):
        super().build(model, values)
        self.dropout_rng = np.random.default_rng(1)


PLAIN_DROPOUT = next(i for i in SPEC if i.id == "dropout-in-container-follows-eval[plain_list]")


def test_a_variant_that_leaves_dropout_training_explains_a_random_difference():
    """The variant oracle draws its own mask, so it cannot give the framework's values: from that
    step a `reference` value check is reproduced by a value that differs from the reference."""
    record = run_instance(OwnDropoutMask(), PLAIN_DROPOUT, [known("plain-contained-layers-stay-train")])
    assert record.verdict == "divergence" and record.unexplained is None
    assert [v.name for v in record.documented.variants] == ["plain-contained-layers-stay-train"]
    assert run_instance(OwnDropoutMask(), PLAIN_DROPOUT, []).documented is None


def test_a_profile_that_predicts_a_random_difference_is_contradicted_by_the_identity():
    """A framework whose contained dropout follows eval conforms; a profile saying it stays in
    train mode predicts a difference that did not happen."""
    record = run_instance(ReferenceRunner(), PLAIN_DROPOUT, [known("plain-contained-layers-stay-train")])
    assert record.verdict == "conform" and "expects a difference" in record.unexplained



@pytest.mark.parametrize("raised, message", [(123, "step 0 raised is int, not an error line"),
                                             ("x" * 301, "step 0 raised is str of 301 characters, not an error line")])
def test_a_malformed_raised_line_is_a_bad_observation(raised, message):
    from conformance.engine.scenario import BadObservation, checked, observe
    case = next(i for i in SPEC if i.id == "bn-train-batch-of-one").case
    reference = observe(ReferenceRunner(), case)
    hostile = observe(ReferenceRunner(), case)
    hostile.steps[0].raised = raised
    with pytest.raises(BadObservation, match=message):
        checked(hostile, case, reference)
    assert checked(reference, case, reference).steps[0].raised.startswith("ValueError: Expected more than 1 value")


@pytest.mark.parametrize("instance, name, hostile, message", [
    ("default-conv-bias[sgd]", "conv.bias", 1, "defaults 'conv.bias' is int, not a bool"),
    ("dropout-rate-positional[rate-0.1]", "drop.rate", 1.5, "defaults 'drop.rate' is 1.5, not a fraction of the inputs zeroed"),
    ("dropout-rate-positional[rate-0.1]", "drop.rate", True, "defaults 'drop.rate' is True, not a finite real number"),
    ("default-conv-padding", "small.padding", 0.3, "defaults 'small.padding' is 0.3, not a padding in pixels per side"),
    ("default-conv-padding", "small.padding", -1, "defaults 'small.padding' is -1, not a padding in pixels per side"),
    ("default-conv-padding", "small.padding", "same", "defaults 'small.padding' is 'same', not a finite real number"),
])
def test_a_malformed_bias_or_rate_is_a_bad_observation(instance, name, hostile, message):
    from conformance.engine.scenario import BadObservation, checked, observe
    case = next(i for i in SPEC if i.id == instance).case
    reference = observe(ReferenceRunner(), case)
    bad = observe(ReferenceRunner(), case)
    bad.defaults[name] = hostile
    with pytest.raises(BadObservation, match=message):
        checked(bad, case, reference)


def test_a_measured_rate_holds_within_its_sampling_error_and_a_bias_must_match():
    from conformance.engine.verdict import _default_check
    from conformance.spec import DROPOUT_PROBE
    spread = 6 * np.sqrt(0.1 * 0.9 / DROPOUT_PROBE)
    assert _default_check("r", "drop.rate", 0.1 + 0.9 * spread, 0.1).held
    assert not _default_check("r", "drop.rate", 0.1 + 1.1 * spread, 0.1).held
    assert not _default_check("r", "drop.rate", 0.9, 0.1).held  # Dropout(0.1) read as the keep probability
    assert _default_check("b", "conv.bias", True, True).held and not _default_check("b", "conv.bias", False, True).held
    assert _default_check("p", "conv.padding", 0.0, 0).held and not _default_check("p", "conv.padding", 1.0, 0).held


def test_explain_runs_the_oracle_only_for_variants_whose_points_it_read(monkeypatch):
    """A variant none of whose points the oracle read is dropped without running the oracle; what explain names is
    what trying every variant in turn names."""
    from conformance.engine import judge
    names = ["clear-default-zero-fills", "bn-running-var-biased", "padding-row-looks-up-zeros", "adam-epsilon-hat"]
    instance = next(i for i in SPEC if i.id == "unused-param-grad[default]")
    _, obs = judge.observe_safely(ReferenceRunner(variants=["clear-default-zero-fills"]), instance.case)
    ref = judge.reference_of(instance.case, 30)
    every = [known(n) for n in names]
    needed = list(every)
    for variant in every:  # the ablation without skipping: one oracle run per variant
        trial = [v for v in needed if v is not variant]
        _, model = judge.observe_safely(ReferenceRunner(variants=[v.variant for v in trial]), instance.case)
        if judge.unexplained(instance, obs, model, ref) is None:
            needed = trial
    runs = []
    monkeypatch.setattr(judge, "ReferenceRunner", lambda **kw: runs.append(kw) or ReferenceRunner(**kw))
    named, miss = judge.explain(instance, obs, ref, every)
    assert miss is None and [v.variant for v in named] == [v.variant for v in needed] == ["clear-default-zero-fills"]
    assert 1 <= len(runs) < 1 + len(names)


def test_a_remembered_oracle_runs_once_per_case_and_variants_and_judges_alike(monkeypatch):
    """Within remembered_oracle() a second judging of the same instances runs no oracle and gives the same records;
    what it hands out is read-only, and outside the block every call runs the oracle again."""
    from conformance.engine import judge
    profile = [known("clear-default-zero-fills")]
    instances = [i for i in SPEC if i.id.startswith("unused-param-grad")]
    observed = {i.id: judge.observe_safely(ReferenceRunner(variants=["clear-default-zero-fills"]), i.case)
                for i in instances}
    alone = [judge.judge(i, observed[i.id], judge.reference_of(i.case, 30), profile, 0.0) for i in instances]
    runs = []
    monkeypatch.setattr(judge, "ReferenceRunner", lambda **kw: runs.append(kw) or ReferenceRunner(**kw))
    with judge.remembered_oracle():
        first = [judge.judge(i, observed[i.id], judge.reference_of(i.case, 30), profile, 0.0) for i in instances]
        ran = len(runs)
        again = [judge.judge(i, observed[i.id], judge.reference_of(i.case, 30), profile, 0.0) for i in instances]
        assert len(runs) == ran > 0
        (_, ref), _ = judge.run_oracle(instances[0].case)
        with pytest.raises(ValueError, match="read-only"):
            ref.initial[next(iter(ref.initial))][...] = 0
    assert [r.model_dump() for r in first] == [r.model_dump() for r in again] == [r.model_dump() for r in alone]
    assert {r.verdict for r in first} >= {"divergence"}
    judge.reference_of(instances[0].case, 30)
    assert len(runs) == ran + 1
