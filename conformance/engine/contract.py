"""A room's contract with its runs: the outcomes that are neither conform nor documented are data,
in the room's expected.yaml (conformance/expected.py reads it), each with why; everything else must
conform or be documented.

For each run (a results file) of a room, `check_run` lists every way the run breaks the contract:
- an outcome that is explained-but-undocumented, unsupported or an error and that no entry lists;
- an entry that does not hold (stale): a case it lists has another outcome, its reason or
  variants differ, or it lists no case of the spec;
- an undocumented divergence (the profile does not reproduce it), or a conform case the profile
  predicts to diverge;
- a variant of the run's profile that no divergence needed, unless an `unused` entry says why (asked only of a
  run of the whole spec).
Entries are scoped like known.yaml's (versions, devices, modes, apis, backends).
"""
from __future__ import annotations

from ..expected import ExpectedOutcome, case_pattern
from ..results import Results


def check_run(doc: Results, expected: list[ExpectedOutcome], spec_ids: list[str],
              all_ids: list[str] | None = None) -> list[str]:
    """Every way this run breaks its room's contract, one line each; empty when it holds. `spec_ids`: the
    instances the run takes (run.takes); `all_ids`: the whole spec's, which an entry's pattern must name
    (default: spec_ids)."""
    run = doc.environment.run
    entries = [e for e in expected if e.holds_for(run)]
    problems = []
    if not doc.complete:
        problems.append("the run is incomplete (interrupted): run it again")
    ids = [c.id for c in doc.cases]
    if missing := [i for i in spec_ids if i not in set(ids)]:
        problems.append(f"{len(missing)} cases of the spec are not in the run, e.g. {missing[0]}")
    every = spec_ids if all_ids is None else all_ids
    bases = {i.split("[")[0] for i in every}
    for entry in entries:
        for pattern in entry.cases:
            if not any(case_pattern(pattern).fullmatch(i) for i in [*every, *bases]):
                problems.append(f"{entry.label()}: {pattern!r} names no case of the spec")
    for case in doc.cases:
        listing = [e for e in entries if e.outcome != "unused" and e.lists(case.id, case.base_id)]
        outcome = case.outcome
        if outcome == "divergence":
            problems.append(f"{case.id}: undocumented divergence ({case.unexplained}): confirm it with a snippet "
                            f"and add the variant to known.yaml, or report it")
        elif outcome == "conform" and case.unexplained:
            problems.append(f"{case.id}: conform, but the profile predicts a divergence ({case.unexplained})")
        if case.verdict in ("conform", "divergence") and not case.checks:
            problems.append(f"{case.id}: {case.verdict} with no check recorded")
        if outcome in ("conform", "documented", "divergence"):
            problems += [f"{e.label()}: {case.id} is {outcome} (stale entry)" for e in listing]
            continue
        if not listing:
            problems.append(f"{case.id}: {outcome} ({case.reason if outcome != 'explained' else ', '.join(case.variants)}) "
                            f"is not listed in expected.yaml")
        for entry in listing:
            if entry.outcome != outcome:
                problems.append(f"{entry.label()}: {case.id} is {outcome}" + (f" ({case.reason})" if case.reason else ""))
            elif entry.reason and entry.reason not in (case.reason or ""):
                problems.append(f"{entry.label()}: {case.id}'s reason is {case.reason!r}")
            elif entry.variants and sorted(entry.variants) != sorted(case.variants):
                problems.append(f"{entry.label()}: {case.id} needed {', '.join(case.variants) or 'no variant'}")
    used = {name for case in doc.cases for name in case.variants}
    listed_unused = {name for e in entries if e.outcome == "unused" for name in e.variants}
    # a data-parallel run takes only the data-parallel cases: it answers for the variants scoped to its replicas,
    # and the single-process runs for the rest; a run of part of the spec (a smoke run) answers for none
    answerable = [v for v in doc.profile if doc.asked is None and (run.replicas == "1" or run.replicas in v.replicas)]
    for variant in answerable:
        if variant.name not in used and variant.name not in listed_unused:
            problems.append(f"known.yaml: {variant.name} is in force for this run but no divergence needed it "
                            f"(scope it, or list it as unused in expected.yaml with why)")
    for e in entries:
        if e.outcome == "unused":
            problems += [f"{e.label()}: {name} was needed (stale entry)" for name in e.variants if name in used]
            problems += [f"{e.label()}: {name} is not in this run's profile" for name in e.variants
                         if name not in {v.name for v in doc.profile}]
    return problems
