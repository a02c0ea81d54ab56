"""Each variant is one declaration of the points of the oracle's semantics it changes; the oracle names none."""
import re
from pathlib import Path

import pytest

from conformance.oracle import semantics as S
from conformance.oracle.known import KnownVariant, load_known, profile
from conformance.oracle.variants import VARIANTS, semantics, variant
from conformance.run import Run
from conformance.runners import ROOMS, offers
from conformance.spec import SpecError


def test_every_point_is_changed_by_some_variant_and_every_variant_changes_a_point():
    changed = {point for v in VARIANTS.values() for point in v.changes}
    assert changed == S.POINTS, f"points no variant changes: {sorted(S.POINTS - changed)}"
    with pytest.raises(ValueError, match="must change points"):
        variant("x", "does", "does not")
    with pytest.raises(ValueError, match=r"\['no_such_point'\]"):
        variant("x", "does", "does not", no_such_point=True)


def test_the_reference_and_its_runner_name_no_variant():
    """The oracle reads points of Semantics; which variant set them is the declarations' business."""
    source = (Path(S.__file__).parent / "reference.py").read_text() + Path(S.__file__).read_text()
    named = sorted(name for name in VARIANTS if re.search(rf'"{re.escape(name)}"', source))
    assert not named, f"reference.py or semantics.py tests variants by name: {named}"


def test_points_merge_and_contradictions_are_refused():
    sem = semantics(["frozen-still-trained", "trainable-collection-read-each-step", "sgd-default-lr-0.01",
                     "norm-default-eps-1e-3"])
    assert sem.collection_skips_frozen and sem.frozen_grad_in_optimizer and sem.collection_read_each_step
    assert sem.defaults == {("sgd", "lr"): 0.01, ("momentum", "lr"): 0.01, ("batchnorm", "eps"): 1e-3,
                            ("layernorm", "eps"): 1e-3}
    assert semantics([]) == S.REFERENCE
    with pytest.raises(ValueError, match="bn-one-value-normalised and bn-one-value-skipped set bn_one_value"):
        semantics(["bn-one-value-skipped", "bn-one-value-normalised"])
    with pytest.raises(ValueError, match=r"set defaults \('sgd', 'lr'\) differently"):
        semantics(["sgd-default-lr-0.01", "sgd-default-lr-0.1"])
    with pytest.raises(ValueError, match="unknown variants: no-such-variant"):
        semantics(["no-such-variant"])


def test_a_profile_whose_variants_contradict_each_other_is_refused_in_one_line():
    known = [KnownVariant(variant=name, reason="r", link=None) for name in ("bn-one-value-skipped", "bn-one-value-normalised")]
    with pytest.raises(SpecError, match=r"^conformance/runners/paddle/known.yaml: variants .* both in force for paddle 3.0"):
        profile(known, Run("paddle", version="3.0"))


@pytest.mark.parametrize("framework", ROOMS)
def test_every_rooms_profile_is_consistent_in_every_run(framework):
    """Each version bound named in the room's known.yaml, in each run the room offers: the variants in force
    can run together."""
    known = load_known(framework)
    versions = {re.sub(r"^[<>=!~]+", "", part.strip()) for v in known for part in v.versions.split(",") if part.strip()}
    for version in versions | {"0.0.1", "999"}:  # each bound, and beyond every bound
        for run in offers(framework).every_run(framework):
            profile(known, run.replace(version=version))


def test_an_entry_wider_than_its_variants_scope_rule_is_refused_with_its_line(tmp_path):
    """A data-parallel variant holds in runs of several replicas only, a compiled program's in graph mode only:
    a known.yaml entry that leaves the rule's axis open, or names another value, is refused at its line."""
    assert VARIANTS["replica-grads-summed"].holds_only == {"replicas": ("2",)}
    assert VARIANTS["compiled-keeps-first-frozen"].holds_only == {"modes": ("graph",)}
    room = tmp_path / "paddle"
    (room / "confirm").mkdir(parents=True)
    (room / "confirm" / "replica_grads_summed.py").write_text("")
    for scope, refused in [("", True), ("    modes: [eager]\n", True), ("    replicas: ['1', '2']\n", True),
                           ("    replicas: ['2']\n", False)]:
        (room / "known.yaml").write_text("variants:\n  - variant: x\n    reason: r\n    link: null\n".replace(
            "x", "replica-grads-summed") + scope)
        if refused:
            with pytest.raises(SpecError, match=r"known.yaml:2.*replica-grads-summed holds only in runs with "
                                                r"replicas: \['2'\]"):
                load_known("paddle", rooms=tmp_path)
        else:
            assert [v.replicas for v in load_known("paddle", rooms=tmp_path)] == [["2"]]
    with pytest.raises(ValueError, match="is not a scope of the run axes"):
        variant("x", "does", "does not", holds_only={"modes": ("jit",)}, default_clear="zeros")
