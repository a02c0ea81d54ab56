"""`python -m conformance publish`: the results as a static site that works from any static host and
from file:// (no network fetch, no script needed to read it).

    SITE/index.html          first, one row per run with every axis: the five seeds' verdicts and the
                             run's counts (a run mostly of errors is flagged); the freshness stamp
    SITE/porting.html        "from X to Y": pick two runs, see the variants that differ, each in plain
                             words with its upstream link and the cases where it changes the outcome
    SITE/frameworks/<f>.html each framework's profile per version and run, its defaults (settings and initial draws), and
                             what changed between its versions, modes and devices
    SITE/upstream.html       each variant no upstream page states, per framework: where it holds, its
                             snippet and what it printed (`conformance confirm`), the cases it changes
                             with what was observed: for maintainers
    SITE/cases/index.html    every case instance, a row each, with its outcome in every run
    SITE/cases/<case>.html   a page per case (a stable permalink; each instance an anchor): its YAML
                             source, each run's verdict with expected vs observed per check, the
                             variants that explain it with their confirm snippet's source, and the
                             `repro` line to paste
    SITE/features.html       each semantic feature across frameworks and versions, in one grid each (caniuse's
                             way): observed by a run, declared by the room's known.yaml, or absent
    SITE/asv/                the benchmarks' asv site, where `asv publish` wrote one (served over HTTP)
    SITE/data/               the results files as read, index.json (each file with its axes, suite
                             commit, dates, counts and sha256), summary.csv, history.json: every
                             publish's outcomes, kept from the site given to --history, and
                             semantics.json: the data keyed by semantic feature (semantics.py)

The pages share the report's templates (templates/_macros.html) and its reading of results
(page.py): a file the report would leave out with a warning is left out here too.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import re
import os
import shutil
import sys
from pathlib import Path
from urllib.parse import quote

from pydantic import BaseModel

from ..kernel.files import lock, unlock, write_atomic
from ..oracle.variants import VARIANTS
from ..run import AXES, Run
from ..spec import SPEC_DIR
from ..spec.safe_yaml import read_text
from .bench import one_line
from .page import (CELL, TEMPLATES, Column, OutputError, _grouped, _no_formula, case_rows, cell_class, defaults_table,
                   device_differences, execution_differences, load_columns, long_table, mostly_errors, profile_table, safe_href,
                   summary_counts, variants_of, version_changes, version_key)

REPO = Path(__file__).resolve().parents[2]


def page_name(base_id: str) -> str:
    """The file name of a case's page: its id where the id is a plain word (every spec id is)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", base_id)[:120] + ".html"


def case_source(source: str, spec_dir: Path) -> str:
    """The YAML of one case, from `file.yaml:line` to the next case of its file; "" where unreadable."""
    name, _, line = source.rpartition(":")
    path = Path(spec_dir) / name
    if not line.isdigit() or path.parent != Path(spec_dir) or not path.is_file():
        return ""
    try:
        lines = read_text(path, 4 << 20).splitlines()
    except (OSError, ValueError):
        return ""
    start = int(line) - 1
    if not 0 <= start < len(lines):
        return ""
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= indent), len(lines))
    return "\n".join(lines[start:end]).rstrip()


def snippet_source(snippet: str) -> str:
    """A confirm snippet's text from the suite's checkout; "" for a path outside its rooms."""
    path = (REPO / snippet).resolve()
    rooms = (REPO / "conformance" / "runners").resolve()
    if rooms not in path.parents or path.suffix != ".py" or not path.is_file():
        return ""
    try:
        return read_text(path, 1 << 20)
    except (OSError, ValueError):
        return ""


def repro_line(case_id: str, col: Column) -> str:
    """The command that replays `case_id` as `col` ran it, step by step beside the reference."""
    run = col.run
    options = [f"--{a.name} {getattr(run, a.name)}" for a in AXES
               if a.option and getattr(run, a.name) and getattr(run, a.name) != a.default]
    quoted = "'" + case_id.replace("'", "'\\''") + "'"
    return " ".join(["python -m conformance repro", quoted, f"--framework {run.framework}", *options])


def data_index(columns: list[Column], copies: dict[str, str]) -> list[dict]:
    """data/index.json: every results file published, with its axes, provenance, counts and sha256."""
    entries = []
    for col in columns:
        if not col.doc or col.key not in copies:
            continue
        env = col.doc.environment
        path = copies[col.key]
        entries.append(dict(file=path, **{a.name: getattr(col.run, a.name) for a in AXES},
                            accelerator=env.accelerator, packages=env.packages, suite_sha=env.suite_sha,
                            spec_hash=env.spec_hash,
                            started=env.started, finished=env.finished, complete=col.doc.complete,
                            cases=len(col.doc.cases), summary=col.doc.summary,
                            sha256=hashlib.sha256(Path(col.path).read_bytes()).hexdigest()))
    return entries


def porting_data(runs: list[Column], pages: dict[str, str]) -> dict:
    """What the "from X to Y" page compares, for any two runs: each run's profile (the variants in
    force for it) and, per variant, its behaviour against the reference's, and per run that holds
    it, the profile's reason and link and the cases whose divergence it explains there."""
    variants: dict[str, dict] = {}
    out_runs = {}
    for col in runs:
        out_runs[col.key] = dict(label=f"{col.framework} {col.run.version} {col.run.label}".strip(),
                                 variants=[v.name for v in col.doc.profile])
        for entry in col.doc.profile:
            known = VARIANTS.get(entry.name)
            item = variants.setdefault(entry.name, dict(
                behaviour=known.behaviour if known else entry.reason, reference=known.reference if known else "",
                runs={}))
            cases = [c.id for c in col.doc.cases if any(v.name == entry.name for v in variants_of(c))]
            item["runs"][col.key] = dict(reason=entry.reason, link=safe_href(entry.link) if entry.link else None,
                                         cases=[[i, f"cases/{pages.get(c.base_id, page_name(c.base_id))}#{quote(i)}"]
                                                for i, c in ((c.id, c) for c in col.doc.cases if c.id in cases)])
    return dict(runs=out_runs, variants=variants)


MAX_CONFIRM_BYTES = 4 << 20


def load_confirmed(folder: Path | None, warn) -> list:
    """What `conformance confirm` recorded in folder (a ConfirmRun per framework version); a file that
    is not one is left out with a warning."""
    from ..confirm import ConfirmRun
    if folder is None or not Path(folder).is_dir():
        return []
    found = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            if path.is_symlink():
                raise ValueError("a link: not followed")
            found.append(ConfirmRun.model_validate_json(read_text(path, MAX_CONFIRM_BYTES)))
        except (OSError, ValueError) as exc:  # ValidationError is a ValueError
            warn(f"{path}: not a record of `conformance confirm` ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}): left out")
    return found


def upstream_findings(runs: list[Column], pages: dict[str, str], confirmed: list = ()) -> list[dict]:
    """Each variant a framework's profile holds that no upstream page states (link: null), once per
    framework: the runs it holds in, its reason, its confirm snippet's source and what it printed on
    each version `conformance confirm` ran it, and the cases it explains with what was observed
    against what the reference gives: what a maintainer needs."""
    found: dict[tuple, dict] = {}
    for col in runs:
        for entry in col.doc.profile:
            if entry.link is not None:
                continue
            item = found.setdefault((col.framework, entry.name), dict(
                framework=col.framework, name=entry.name, reason=entry.reason, snippet=entry.snippet,
                source=snippet_source(entry.snippet), behaviour=VARIANTS[entry.name].behaviour if entry.name in VARIANTS else "",
                reference=VARIANTS[entry.name].reference if entry.name in VARIANTS else "", runs=[], cases={},
                printed=sorted([dict(version=record.version, suite_sha=record.suite_sha, finished=record.finished,
                                     returncode=out.returncode, output=out.output)
                                for record in confirmed if record.framework == col.framework
                                for out in record.snippets if out.variant == entry.name],
                               key=lambda out: version_key(out["version"]))))
            item["runs"].append(col)
            for case in col.doc.cases:
                if any(v.name == entry.name for v in variants_of(case)):
                    item["cases"].setdefault(case.id, dict(page=pages.get(case.base_id, page_name(case.base_id)),
                                                           runs=[], case=case))["runs"].append(col)
    return sorted(found.values(), key=lambda item: (item["framework"], item["name"]))


class Snapshot(BaseModel):
    """One publish, as data/history.json keeps it: when, from which suite commits, and the outcome of
    every case in every run (cell class, then the explaining variants, space-separated), with each
    run's line (the run without its version) and version, to follow a case across releases."""
    published: str
    suites: list[str]
    outcomes: dict[str, dict[str, str]]  # run key -> case id -> outcome
    lines: dict[str, str] = {}           # run key -> Run.line
    versions: dict[str, str] = {}        # run key -> framework version


def predecessor(before: Snapshot, now: Snapshot, run: str) -> str | None:
    """The run of `before` that `run` replaced: `run` itself where `before` has it, else the newest
    release of its line that `before` published and `now` no longer does (a framework upgrade)."""
    if run in before.outcomes:
        return run
    line = now.lines.get(run)
    gone = [r for r in before.outcomes if line and before.lines.get(r) == line and r not in now.outcomes]
    return max(gone, key=lambda r: version_key(before.versions.get(r, "")), default=None)


class History(BaseModel):
    snapshots: list[Snapshot] = []


MAX_HISTORY_BYTES = 256 << 20


def capped(history: History, warn, limit: int = MAX_HISTORY_BYTES) -> str:
    """The history as JSON within `limit` bytes (what load_history reads back): the oldest snapshots
    dropped, with a warning, where all of them do not fit."""
    text = history.model_dump_json()
    size, dropped = len(text.encode()), 0
    while size > limit and len(history.snapshots) > 1:
        # as many as the excess holds average snapshots, and one more
        drop = min(len(history.snapshots) - 1, int((size - limit) / (size / len(history.snapshots))) + 1)
        del history.snapshots[:drop]
        dropped += drop
        text = history.model_dump_json()
        size = len(text.encode())
    if dropped:
        warn(f"the history reached its size cap ({limit >> 20} MiB): the {dropped} oldest snapshots were dropped, "
             f"the newest {len(history.snapshots)} kept")
    return text


def load_history(site: Path, warn) -> History:
    """The previous site's data/history.json; an empty history (with a warning) where it has none
    or it is not one."""
    path = Path(site) / "data" / "history.json"
    if not path.exists() and not path.is_symlink():  # a site's first publish: nothing is wrong, so no page warning
        print(f"note: --history {site}: no history yet ({path}): starting one", file=sys.stderr)
        return History()
    try:
        return History.model_validate_json(read_text(path, MAX_HISTORY_BYTES))
    except (OSError, ValueError) as exc:  # ValidationError is a ValueError
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        warn(f"--history {site}: {path} is not a history of this suite ({first}): starting a new one")
        return History()


def outcome_word(case) -> str:
    return " ".join([cell_class(case), *(v.name for v in variants_of(case))])


def changes(history: History, snapshot: Snapshot) -> list[dict]:
    """Per case of a run that the last snapshot also published (or published in the release this run
    replaced): the cases whose outcome differs."""
    if not history.snapshots:
        return []
    last = history.snapshots[-1]
    found = []
    for run, cases in snapshot.outcomes.items():
        then = predecessor(last, snapshot, run)
        if then is None:
            continue
        found += [dict(run=run, was=then if then != run else "", id=case_id, before=last.outcomes[then][case_id],
                       after=now) for case_id, now in cases.items()
                  if case_id in last.outcomes[then] and last.outcomes[then][case_id] != now]
    return found


def timeline(history: History, case_id: str) -> list[dict]:
    """Per run, each snapshot where this case's outcome differs from the snapshot before it (a run's
    first appearance included, flagged where it differs from the release of its line it replaced):
    when the outcome changed across suite commits and framework releases."""
    rows, seen = [], {}
    for number, snap in enumerate(history.snapshots):
        before = history.snapshots[number - 1] if number else None
        for run, cases in snap.outcomes.items():
            if case_id not in cases or seen.get(run) == cases[case_id]:
                continue
            was = predecessor(before, snap, run) if before and run not in seen else None
            was = was if was and case_id in before.outcomes[was] else None
            rows.append(dict(published=snap.published, suites=snap.suites, run=run, outcome=cases[case_id],
                             was=was if was != run else None,
                             flag=run in seen or (was is not None and before.outcomes[was][case_id] != cases[case_id])))
            seen[run] = cases[case_id]
    return rows


def feature_grid(dataset, runs: list[Column]) -> list[dict]:
    """Each semantic feature (semantics.Dataset) across the frameworks and the versions these runs hold, as caniuse
    shows a feature: per framework version, "observed" (a run of it needed the feature), "declared" (its room's
    known.yaml holds it for the version, and no run here needed it) or "absent"."""
    from packaging.specifiers import SpecifierSet
    versions = {}
    for col in runs:
        versions.setdefault(col.framework, set()).add(col.run.version)
    grid = []
    for name, feature in dataset.features.items():
        rows = []
        for framework, entry in feature.frameworks.items():
            cells = []
            for version in sorted(versions.get(framework, ()), key=version_key):
                observed = [o for o in entry.observed if o.version == version]
                declared = [d for d in entry.declared if not d.versions or _holds(SpecifierSet(d.versions), version)]
                state = "observed" if observed else "declared" if declared else "absent"
                runs_text = "; ".join(f"{o.device} {Run('', mode=o.mode, api=o.api, backend=o.backend, replicas=o.replicas, engine=o.engine).execution}: {len(o.cases)} cases"
                                      for o in observed)
                cells.append(dict(version=version, state=state, runs=runs_text))
            scopes = [", ".join(f"{k} {v}" if isinstance(v, str) else f"{k} {'/'.join(v)}"
                                for k, v in d.model_dump(include={"versions", "devices", "modes", "apis", "backends",
                                                                  "replicas", "engines"}).items() if v) or "everywhere"
                      for d in entry.declared]
            links = sorted({d.link for d in entry.declared if d.link})
            rows.append(dict(framework=framework, cells=cells, scopes=scopes, links=links))
        grid.append(dict(name=name, behaviour=feature.behaviour, reference=feature.reference, rows=rows,
                         cases=feature.cases))
    return grid


def _holds(specifier, version: str) -> bool:
    try:
        return specifier.contains(version, prereleases=True)
    except ValueError:  # a version string PEP 440 cannot read
        return False


def filter_attributes(runs: list[Column]) -> dict:
    """What the case table's filters match on: per case, its outcomes as framework:class words and
    the variants that explain it in any run; and every such variant, for the filter's choices."""
    outcomes, explained = {}, {}
    for col in runs:
        for case in col.doc.cases:
            outcomes.setdefault(case.id, set()).add(f"{col.framework}:{cell_class(case)}")
            explained.setdefault(case.id, set()).update(v.name for v in variants_of(case))
    return dict(outcomes={k: " ".join(sorted(v)) for k, v in outcomes.items()},
                explained={k: " ".join(sorted(v)) for k, v in explained.items()},
                variant_names=sorted(set().union(*explained.values())))


def script_json(data) -> str:
    """JSON to embed in a <script> element: nothing in it can close the element."""
    return json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _links(folder: str, names: list[str], warn) -> list[str]:
    """The links among an asv folder's entries, left out of the site: one could point anywhere on this machine
    (an absolute link to /etc), and a web server would serve what it points to. asv publish writes none."""
    links = [name for name in names if os.path.islink(os.path.join(folder, name))]
    for name in links:
        warn(f"{os.path.join(folder, name)}: a link in the asv site, left out of the published one")
    return links


def publish(results_dirs, out_dir: Path, spec_dir=None, history_site: Path | None = None,
            asv_site: Path | None = None, confirm_dir: Path | None = None) -> Path:
    """Write the site into out_dir (OutputError if it cannot); returns its index.html. With
    history_site (a site published before, out_dir itself allowed), its data/history.json is kept and
    this publish added to it: the landing page lists what changed since that site's last publish.
    asv_site (`asv publish`'s folder), where it holds a site, is copied to SITE/asv/. confirm_dir holds
    what `conformance confirm` recorded: the findings' page shows what each snippet printed.
    Two publishes into one site take turns (a lock beside it, SITE.lock): each keeps the other's snapshot."""
    out_dir = Path(out_dir)
    try:
        held = lock(out_dir, wait=True)
    except OSError as exc:
        raise OutputError(f"{exc.filename + ': ' if exc.filename else ''}{exc.strerror or exc}") from None
    try:
        return _publish(results_dirs, out_dir, spec_dir, history_site, asv_site, confirm_dir)
    finally:
        unlock(out_dir, held)


def _publish(results_dirs, out_dir: Path, spec_dir, history_site, asv_site, confirm_dir) -> Path:
    warnings = []

    def warn(message):
        message = one_line(message)
        print(f"warning: {message}", file=sys.stderr)
        warnings.append(message)

    out_dir = Path(out_dir)
    spec_dir = Path(spec_dir or SPEC_DIR)
    columns = load_columns([Path(d) for d in results_dirs], out_dir, warn)
    runs = [c for c in columns if c.doc]
    table = long_table(columns)
    rows = case_rows(columns, spec_dir)
    counts = summary_counts(table, columns)
    built = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    pages = {base: page_name(base) for base in dict.fromkeys(rows.base_id)}
    records = {(case.id, col.key): case for col in runs for case in col.doc.cases}

    env = TEMPLATES
    common = dict(built=built, legend=CELL, warnings=warnings, runs=runs, columns=columns, cell_class=cell_class)
    stamp = dict(suites=sorted({c.doc.environment.suite_sha for c in runs}),
                 newest=max((c.doc.environment.finished or c.doc.environment.started for c in runs), default=""),
                 versions=sorted({f"{c.framework} {c.run.version}" for c in runs}))
    history = load_history(history_site, warn) if history_site is not None else History()
    snapshot = Snapshot(published=built, suites=stamp["suites"],
                        outcomes={c.key: {case.id: outcome_word(case) for case in c.doc.cases} for c in runs},
                        lines={c.key: c.run.line for c in runs}, versions={c.key: c.run.version for c in runs})
    base_of = {c.id: c.base_id for col in runs for c in col.doc.cases}
    changed = [dict(ch, page=pages[base_of[ch["id"]]]) for ch in changes(history, snapshot)]
    previous = history.snapshots[-1].published if history.snapshots else None
    history.snapshots.append(snapshot)
    flagged = mostly_errors(counts)
    files = {"index.html": env.get_template("site_index.html").render(
        **common, root="", counts=counts, flagged=flagged, stamp=stamp, records=records, pages=pages,
        framework_pages={c.framework: page_name(c.framework) for c in runs},
        asv=asv_site is not None and (Path(asv_site) / "index.html").is_file(),
        changed=changed, previous=previous,
        seeds=_grouped(rows[rows.topic == "seeds"]), axes=[a for a in AXES if a.name != "framework"])}
    # every case id -> its page and anchor, for the tables the site shares with the report page
    case_pages = {i: f"{pages[b]}#{quote(i)}" for i, b in zip(rows.id, rows.base_id)}
    frameworks = sorted({c.framework for c in runs}, key=lambda f: [c.framework for c in runs].index(f))
    for framework in frameworks:
        mine = [c for c in columns if c.framework == framework]
        files[f"frameworks/{page_name(framework)}"] = env.get_template("site_framework.html").render(
            **common, root="../", framework=framework, mine=[c for c in mine if c.doc], case_pages=case_pages,
            profiles=profile_table(mine), defaults=defaults_table(mine), changes=version_changes(mine),
            executions=execution_differences(mine), devices=device_differences(mine))
    files["porting.html"] = env.get_template("site_porting.html").render(
        **common, root="", data=script_json(porting_data(runs, pages)))
    files["upstream.html"] = env.get_template("site_upstream.html").render(
        **common, root="", findings=upstream_findings(runs, pages, load_confirmed(confirm_dir, warn)))
    from ..semantics import build as semantics
    dataset = semantics(runs)
    files["features.html"] = env.get_template("site_features.html").render(
        **common, root="", features=feature_grid(dataset, runs), dataset_version=dataset.dataset_version)
    files["cases/index.html"] = env.get_template("site_cases.html").render(
        **common, root="../", records=records, pages=pages, frameworks=sorted({c.framework for c in runs}),
        **filter_attributes(runs), topics=[(topic, _grouped(part)) for topic, part in rows.groupby("topic", sort=False)])
    for base, part in rows.groupby("base_id", sort=False):
        group = _grouped(part)[0]
        instances = []
        for inst_id, label in group["instances"]:
            cells = []
            for col in runs:
                case = records.get((inst_id, col.key))
                if case is not None:
                    cells.append(dict(col=col, case=case, cls=cell_class(case), repro=repro_line(inst_id, col),
                                      variants=[dict(v=v, source=snippet_source(v.snippet)) for v in variants_of(case)]))
            instances.append(dict(id=inst_id, label=label, cells=cells))
        files[f"cases/{pages[base]}"] = env.get_template("site_case.html").render(
            **common, root="../", group=group, instances=instances, topic=part.topic.iloc[0],
            yaml=case_source(part.source.iloc[0], spec_dir),
            timelines={inst_id: timeline(history, inst_id) for inst_id, _ in group["instances"]}
            if len(history.snapshots) > 1 else {})

    copies = {col.key: f"data/results/{col.key}.json" for col in runs}
    csv = table.map(_no_formula) if hasattr(table, "map") else table.applymap(_no_formula)
    files["data/summary.csv"] = csv.to_csv(index=False)
    files["data/index.json"] = json.dumps(dict(built=built, results=data_index(runs, copies)), indent=1)
    files["data/history.json"] = capped(history, warn)
    files["data/semantics.json"] = dataset.model_dump_json(indent=1)  # keyed by feature (semantics.py)
    try:
        for folder in ("cases", "data", "data/results", "frameworks", "asv"):  # as the report: never through a link
            if (out_dir / folder).is_symlink():
                raise OutputError(f"{out_dir / folder} is a link: not followed")
        for name, text in files.items():
            (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
            write_atomic(out_dir / name, text)
        (out_dir / "data" / "results").mkdir(parents=True, exist_ok=True)
        for col in runs:  # a new file renamed over the copy: a link planted there is replaced, never written through
            write_atomic(out_dir / copies[col.key], Path(col.path).read_bytes())
        if asv_site is not None and (Path(asv_site) / "index.html").is_file():
            shutil.rmtree(out_dir / "asv", ignore_errors=True)
            shutil.copytree(asv_site, out_dir / "asv", ignore=lambda folder, names: _links(folder, names, warn))
    except FileExistsError:
        raise OutputError("a path in it exists and is not a folder") from None
    except OSError as exc:
        raise OutputError(f"{exc.filename + ': ' if exc.filename else ''}{exc.strerror or exc}") from None
    return out_dir / "index.html"

