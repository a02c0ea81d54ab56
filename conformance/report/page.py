"""Build the comparison report: reports/index.html (self-contained) and reports/summary.csv.

pandas shapes the tables, jinja2 (autoescaping every string from results) renders the page,
matplotlib draws the benchmark plots, embedded as PNG data URIs so the page opens offline.
"""
from __future__ import annotations

import datetime
import itertools
import os
import sys
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from urllib.parse import quote, urlsplit, urlunsplit

import pandas as pd
from packaging.version import Version
from jinja2 import Environment, PackageLoader, select_autoescape

from .. import results
from ..kernel.files import write_atomic
from .bench import load_benchmarks, one_line, plot_benchmarks, relative_table
from ..oracle.variants import VARIANTS
from ..run import AXES, AXIS, Run
from ..runners import FRAMEWORKS, ROOMS
from ..spec import SPEC_DIR, SpecError, load_spec

COLUMNS = ROOMS
# verdict class -> (symbol, label); colour lives in the template's CSS
CELL = {"conform": ("✓", "conform"), "documented": ("◆", "documented divergence"),
        "explained": ("◇", "explained, undocumented divergence"),
        "divergence": ("✗", "undocumented divergence"), "error": ("!", "error"),
        "unsupported": ("–", "unsupported"), "missing": ("·", "not run")}


def cell_class(case: results.CaseRecord) -> str:
    """A divergence is documented or explained when the oracle under the profile reproduced it."""
    return "documented" if case.documented else "explained" if case.explained_by else case.verdict


def variants_of(case: results.CaseRecord) -> list[results.VariantRecord]:
    """The variants the oracle needed to reproduce this case's divergence (none if it did not)."""
    explanation = case.documented or case.explained_by
    return explanation.variants if explanation else []


class OutputError(Exception):
    """The report cannot be written where asked; the message is one line."""


def safe_href(target, anchor: bool = False) -> str | None:
    """The href of every link on the page, or None: show the target as plain text instead.

    An in-page anchor (anchor=True) or a file beside the page (a PurePath relative to it) is
    percent-quoted behind '#' or './', so no name can become a scheme such as javascript:.
    Any other link must be http(s) with a host."""
    if anchor:
        return "#" + quote(str(target), safe="[],=:@!$'()*+;/?", errors="backslashreplace")
    if isinstance(target, PurePath):
        return "./" + quote(target.as_posix(), errors="surrogateescape")  # the file name's own bytes
    try:
        parts = urlsplit(str(target).strip())  # drops the tabs and newlines browsers drop too
    except ValueError:  # e.g. a broken IPv6 host
        return None
    return urlunsplit(parts) if parts.scheme in ("http", "https") and parts.hostname else None


# One environment per process: jinja2 compiles each template once, not once per page built.
TEMPLATES = Environment(loader=PackageLoader("conformance.report", "templates"), autoescape=select_autoescape(["html"]))
TEMPLATES.filters["safe_href"] = safe_href


@dataclass
class Column:
    """One run (framework, version, device, mode, api): a column of the report."""
    framework: str
    status: str               # ok | incomplete | not run | malformed | wrong framework
    note: str = ""            # why not run / what is malformed / which older copy it replaced
    doc: results.Results | None = None
    file: PurePath | None = None  # path relative to the report
    path: Path | None = None      # the results file as found
    key: str = ""             # the run's axes as one word; unique among the columns

    def __post_init__(self):
        if not self.key:
            env = self.doc.environment if self.doc else None
            self.key = env.run.name \
                if env else f"{self.framework}-{self.status.replace(' ', '_')}-{self.file or ''}"

    @property
    def run(self) -> Run | None:
        return self.doc.environment.run if self.doc else None

    @property
    def axes(self) -> str:
        """What tells this run apart beside its framework and version (empty for cpu, eager, loop),
        e.g. "graph (aot_eager)" or "trainer"."""
        return self.run.label if self.doc else ""

    @property
    def execution(self) -> str:
        """Mode (with backend) and api alone: what differs between runs of one version on one device."""
        return self.run.execution


def version_key(version: str) -> Version:
    """A release as PEP 440 orders it; one it cannot parse sorts first."""
    try:
        return Version(version)
    except ValueError:  # InvalidVersion, or an integer part too long to convert
        return Version("0")


def _order(col: Column):
    """Columns grouped by framework, versions side by side (oldest first), then device, mode, api."""
    rank_of = lambda value, order: order.index(value) if value in order else len(order)
    run = col.run
    version = version_key(run.version) if run else Version("0")
    rank = COLUMNS.index(col.framework) if col.framework in COLUMNS else len(COLUMNS)
    if run is None:
        return (rank, col.framework, version, "", 0, 0, col.key)
    return (rank, col.framework, version, run.device, rank_of(run.mode, AXIS["mode"].values),
            rank_of(run.api, AXIS["api"].values), col.key)


def load_columns(results_dirs, report_dir: Path, warn) -> list[Column]:
    """Every results file (*.json) of every folder is a run. The same run found twice (same axes) is
    one column, the newer file, with a warning; a framework with no run keeps a "not run" column."""
    runs: dict[str, Column] = {}
    others: list[Column] = []
    for folder in results_dirs:
        for path in sorted(Path(folder).glob("*.json")):
            rel = PurePosixPath(os.path.relpath(path, report_dir))
            named = path.stem.split("-")[0]  # a run's file starts with its framework's name
            try:
                doc = results.read(path)
            except (OSError, ValueError) as exc:  # results.Malformed is a ValueError
                first = " ".join(str(exc).splitlines()[:2])
                others.append(Column(named, "malformed", f"{path.name}: {first}", file=rel))
                warn(f"{path}: malformed: {first}")
                continue
            claimed = doc.environment.framework
            if claimed == named == "reference":  # the oracle's self-check of the spec: no framework's column
                warn(f"{path}: a run of the reference oracle (a self-check of the spec): not shown")
                continue
            if claimed not in COLUMNS or (named in FRAMEWORKS and named != claimed):
                what = "another framework" if claimed in FRAMEWORKS else "an unknown framework"
                others.append(Column(named, "wrong framework",
                                     f"{path.name} holds results of {what}, {claimed[:60]!r}: not shown", file=rel))
                warn(f"{path}: environment.framework is {claimed[:60]!r}, not {named!r}: not shown")
                continue
            status = "ok" if doc.complete else "incomplete"
            note = "" if doc.complete else "the run was interrupted: only finished cases are shown"
            col = Column(claimed, status, note, doc, rel, path)
            older = runs.get(col.key)
            if older is not None:
                newest, dropped = sorted((older, col), key=lambda c: c.doc.environment.finished
                                         or c.doc.environment.started)[::-1]
                warn(f"{dropped.file} and {newest.file} hold the same run ({col.key}): showing the newer, {newest.file}")
                newest.note = " ".join(x for x in (newest.note, f"newer than {dropped.file}") if x)
                col = newest
            runs[col.key] = col
    columns = list(runs.values()) + others
    present = {c.framework for c in columns}
    columns += [Column(f, "not run", f"no results for {f}: run `tox -e {f}`") for f in COLUMNS if f not in present]
    return sorted(columns, key=_order)


# summary.csv's column for each run axis, in the axis table's order: the axis's name, but the version's
# as the results file's environment calls it
AXIS_COLUMNS = {axis.name: "framework_version" if axis.name == "version" else axis.name for axis in AXES}


def long_table(columns: list[Column]) -> pd.DataFrame:
    """One row per (framework, case instance) that a results file holds: the run's key, every axis, the case."""
    rows = []
    for col in columns:
        for case in col.doc.cases if col.doc else []:
            rows.append(dict(run=col.key, **{column: getattr(col.run, axis) for axis, column in AXIS_COLUMNS.items()},
                             id=case.id, base_id=case.base_id, topic=case.topic, title=case.title,
                             verdict=case.verdict, cell=cell_class(case), documented=bool(case.documented),
                             variants=" ".join(v.name for v in variants_of(case)),
                             reason=case.reason or "", unexplained=case.unexplained or ""))
    return pd.DataFrame(rows, columns=["run", *AXIS_COLUMNS.values(), "id", "base_id", "topic", "title",
                                       "verdict", "cell", "documented", "variants", "reason", "unexplained"])


def case_rows(columns: list[Column], spec_dir) -> pd.DataFrame:
    """Every case instance in spec order (then any only the results know), with title, references and
    where the spec writes it (file.yaml:line)."""
    known = {}
    try:
        for inst in load_spec(spec_dir):
            known[inst.id] = dict(id=inst.id, base_id=inst.case.id, topic=inst.topic, title=inst.case.title,
                                  references=[str(r) for r in inst.case.references], source=inst.source)
    except SpecError:
        pass  # the results still carry titles and references
    for col in columns:
        for case in col.doc.cases if col.doc else []:
            known.setdefault(case.id, dict(id=case.id, base_id=case.base_id, topic=case.topic,
                                           title=case.title, references=case.references, source=case.source))
    frame = pd.DataFrame(list(known.values()), columns=["id", "base_id", "topic", "title", "references", "source"])
    frame["order"] = range(len(frame))
    return frame


def _grouped(rows: pd.DataFrame) -> list[dict]:
    """Instances under their base case: the case's title and references are shown once."""
    return [dict(base_id=base, title=part.title.iloc[0], references=part.references.iloc[0],
                 instances=[(i, i[len(base):].strip("[]") or "-") for i in part.id])
            for base, part in rows.groupby("base_id", sort=False)]


def summary_counts(table: pd.DataFrame, columns: list[Column]) -> pd.DataFrame:
    counts = table.pivot_table(index="run", columns="cell", values="id", aggfunc="count", fill_value=0)
    counts = counts.reindex(index=[c.key for c in columns], columns=list(CELL)[:-1], fill_value=0)
    run = counts.sum(axis=1)
    counts["cases"] = run
    counts["conform %"] = (100 * counts["conform"] / run.where(run > 0)).round(1)
    return counts


MOSTLY_ERRORS = 0.25  # a run with more of its cases in error than this is flagged, not read cell by cell


def mostly_errors(counts: pd.DataFrame) -> set[str]:
    """The runs (keys) whose cases are mostly errors: a broken install or harness, not findings."""
    return {key for key, row in counts.iterrows() if row["cases"] and row["error"] > MOSTLY_ERRORS * row["cases"]}


def _cells(table: pd.DataFrame, columns: list[Column]) -> dict:
    """(case id, run key) -> everything a cell shows."""
    by_key = {}
    for col in columns:
        for case in col.doc.cases if col.doc else []:
            cls = cell_class(case)
            checks = "; ".join(f"{c.check}: expected {c.expected}, observed {c.observed}"
                               for c in case.checks if not c.held)
            by_key[case.id, col.key] = dict(cls=cls, symbol=CELL[cls][0], label=CELL[cls][1],
                                                  reason=case.reason or "", case=case,
                                                  tooltip=" | ".join(x for x in (
                                                      CELL[cls][1], case.reason, checks,
                                                      case.unobserved and "not observed: " + "; ".join(case.unobserved)) if x))
    return by_key


def profile_table(columns: list[Column]) -> list[dict]:
    """One row per variant that any run's profile holds: its behaviour, and per run the profile
    entry (versions, reason, link, snippet) with how many of the run's divergences needed it."""
    runs = [c for c in columns if c.doc]
    names = [n for n in VARIANTS if any(v.name == n for c in runs for v in c.doc.profile)]
    rows = []
    for name in names:
        cells = {}
        for col in runs:
            entry = next((v for v in col.doc.profile if v.name == name), None)
            needed = sum(any(v.name == name for v in variants_of(case)) for case in col.doc.cases)
            cells[col.key] = dict(entry=entry, needed=needed) if entry else None
        rows.append(dict(name=name, behaviour=VARIANTS[name].behaviour, cells=cells))
    return rows


def defaults_table(columns: list[Column]) -> list[dict]:
    """What cases leave to each framework's constructor: per instance, each setting ("default" checks) and
    each parameter drawn by its own initializers ("initial" checks, its draw's mean and std), with the
    reference's value (torch's) and what each run observed."""
    rows: dict[tuple, dict] = {}
    for col in columns:
        for case in col.doc.cases if col.doc else []:
            for check in case.checks:
                if check.check.startswith("default "):
                    setting, reference, value = check.check.removeprefix("default "), check.expected, check.observed
                elif check.check.startswith("initial ") and " (reference " in check.observed:
                    # verdict._same_draw's line: "mean m, std s (reference mean m, std s)"
                    value, reference = check.observed.removesuffix(")").split(" (reference ", 1)
                    setting = f"{check.check.removeprefix('initial ')} as built"
                else:
                    continue
                row = rows.setdefault((case.id, setting), dict(case=case.id, setting=setting, reference=reference,
                                                               cells={}))
                row["cells"][col.key] = dict(value=value, held=check.held)
    return [rows[key] for key in sorted(rows)]


def _main_last(col: Column):
    """A sort key that puts a version's main run last: one of the whole spec (not a smoke run, nor a selection),
    the cpu eager loop where it is one."""
    return col.doc.asked is None, col.axes == "", _order(col)


def latest_runs(columns: list[Column]) -> list[Column]:
    """Each framework's newest version, its main run: what porting notes compare."""
    chosen = {}
    for col in sorted((c for c in columns if c.doc), key=_main_last):
        chosen[col.framework] = col
    return sorted(chosen.values(), key=_order)


def _changed(before: Column, after: Column, outcome) -> list[dict]:
    """Every case both runs hold whose outcome(record) differs, with both records."""
    old = {c.id: c for c in before.doc.cases}
    return [dict(id=case.id, before=old[case.id], after=case) for case in after.doc.cases
            if case.id in old and outcome(old[case.id]) != outcome(case)]


def version_changes(columns: list[Column]) -> list[dict]:
    """Per framework, for two runs that differ only in version (next to each other in version order):
    every case whose outcome differs, with both observations."""
    changes = []
    runs = [c for c in columns if c.doc]  # sorted by framework, then version
    for _, group in itertools.groupby(sorted(runs, key=lambda c: (c.framework, c.axes)),
                                      key=lambda c: (c.framework, c.axes)):
        group = sorted(group, key=_order)
        for older, newer in zip(group, group[1:]):
            cases = _changed(older, newer, lambda c: (cell_class(c), [v.name for v in variants_of(c)], c.reason))
            changes.append(dict(framework=older.framework, older=older, newer=newer, cases=cases))
    return sorted(changes, key=lambda ch: _order(ch["older"]))


def execution_differences(columns: list[Column]) -> list[dict]:
    """Per framework version and device, each other run beside its main run (the eager loop, unless that ran
    part of the spec): every case whose verdict or explaining variants differ (the reason's numbers may
    differ without that), and the cases only one of them could run."""
    runs = [c for c in columns if c.doc]
    where = lambda c: (c.framework, c.doc.environment.framework_version, c.doc.environment.device)
    is_loop = lambda c: (c.doc.environment.mode, c.doc.environment.api) == ("eager", "loop")
    bases = {}
    for col in sorted(runs, key=lambda c: (c.doc.asked is not None, not is_loop(c), _order(c)), reverse=True):
        bases[where(col)] = col  # the last one, the main run, stays
    out = []
    for col in runs:
        base = bases.get(where(col))
        if base is None or col is base:
            continue
        ran = lambda c: c.verdict != "unsupported"
        changed = _changed(base, col, lambda c: (cell_class(c), [v.name for v in variants_of(c)]))
        out.append(dict(framework=col.framework, base=base, run=col,
                        cases=[ch for ch in changed if ran(ch["before"]) and ran(ch["after"])],
                        not_run=[ch for ch in changed if ran(ch["before"]) and not ran(ch["after"])],
                        only_here=[ch for ch in changed if not ran(ch["before"]) and ran(ch["after"])]))
    return sorted(out, key=lambda d: _order(d["run"]))


def device_differences(columns: list[Column]) -> list[dict]:
    """Per framework version, mode, backend and api run on more than one device: each other device's
    run beside the cpu run, with every case whose verdict or explaining variants differ (nondeterminism
    and TF32 are the usual suspects), then the cases only one of the two could run."""
    runs = [c for c in columns if c.doc]
    alike = lambda c: c.run.replace(device="")
    cpus = {alike(c): c for c in runs if c.run.device == "cpu"}
    out = []
    for col in runs:
        base = cpus.get(alike(col))
        if col.run.device == "cpu" or base is None:
            continue
        ran = lambda c: c.verdict != "unsupported"
        changed = _changed(base, col, lambda c: (cell_class(c), [v.name for v in variants_of(c)]))
        out.append(dict(framework=col.framework, base=base, run=col,
                        cases=[ch for ch in changed if ran(ch["before"]) and ran(ch["after"])],
                        not_run=[ch for ch in changed if ran(ch["before"]) != ran(ch["after"])]))
    return sorted(out, key=lambda d: _order(d["run"]))


def _data_parallel_twins(col: Column, columns: list[Column]) -> list[Column]:
    """The data-parallel runs of col's version, device, mode and api (a column each replica count)."""
    return [c for c in columns if c.doc and c.run.replicas != "1" and c.run.replace(replicas="1") == col.run]


def porting_notes(columns: list[Column]) -> list[dict]:
    """For every ordered pair of frameworks (their newest runs, from X to Y, each with its data-parallel runs of
    that version): each variant one profile holds and the other does not, in both frameworks' words, with the
    cases whose divergence it explains and the replica count where only a data-parallel run holds it."""
    runs = latest_runs(columns)
    held = {}  # framework -> variant name -> (its record, the runs that hold it)
    for col in runs:
        held[col.framework] = {}
        for run in [col, *_data_parallel_twins(col, columns)]:
            for v in run.doc.profile:
                held[col.framework].setdefault(v.name, (v, []))[1].append(run)
    notes = []
    for source, target in itertools.permutations(runs, 2):
        mine, theirs = held[source.framework], held[target.framework]
        items = []
        for name in [n for n in VARIANTS if (n in mine) != (n in theirs)]:
            holder = source if name in mine else target
            entry, holding = (mine | theirs)[name]
            cases = [c.id for run in holding for c in run.doc.cases if any(v.name == name for v in variants_of(c))]
            only_parallel = all(run.run.replicas != "1" for run in holding)
            items.append(dict(name=name, holder=holder.framework, entry=entry, cases=list(dict.fromkeys(cases)),
                              replicas=", ".join(sorted({r.run.replicas for r in holding})) if only_parallel else "",
                              before=VARIANTS[name].behaviour if name in mine else VARIANTS[name].reference,
                              after=VARIANTS[name].behaviour if name in theirs else VARIANTS[name].reference))
        notes.append(dict(source=source.framework, target=target.framework, changes=items))
    return notes


def _md(text) -> str:
    """A Markdown table cell from results text: one line, no table or HTML syntax, no formula start."""
    text = " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
    return "'" + text if text[:1] in "=+-@" else text


def _run_label(col: Column) -> str:
    return _md(f"{col.framework} {col.doc.environment.framework_version} {col.axes}".strip())


def findings_markdown(columns: list[Column], counts: pd.DataFrame, seeds: list[dict], built: str) -> str:
    """reports/findings.md: what the runs found, with their provenance: the verdicts per run, the seed
    reports' outcomes per run, and which variant each run's profile needed how often."""
    runs = [c for c in columns if c.doc]
    suites = sorted({c.doc.environment.suite_sha for c in runs}) or ["no runs"]
    lines = ["# Findings\n", f"Written by `python -m conformance report` on {built} from {len(runs)} results files; "
             f"suite commit {', '.join(_md(s) for s in suites)}. One row or column per run: framework, version "
             f"and what tells the run apart (device, mode with its backend, api).\n",
             "## Verdicts per run\n",
             "| run | cases | conform | ◆ documented | ◇ explained | ✗ undocumented | error | unsupported |",
             "|---|---|---|---|---|---|---|---|"]
    for col in runs:
        row = counts.loc[col.key]
        lines.append(f"| {_run_label(col)} | " + " | ".join(str(int(row[k])) for k in (
            "cases", "conform", "documented", "explained", "divergence", "error", "unsupported")) + " |")
    lines += ["", "## The seed reports\n", "Per instance of each seed case: ✓ conform, ◆ documented, ◇ explained, "
              "✗ undocumented, ! error, – unsupported.\n",
              "| run | " + " | ".join(f"`{s['base_id']}`" for s in seeds) + " |", "|---" * (len(seeds) + 1) + "|"]
    for col in runs:
        by_id = {c.id: c for c in col.doc.cases}
        cells = ["".join(CELL[cell_class(by_id[i])][0] if i in by_id else CELL["missing"][0]
                         for i, _ in seed["instances"]) for seed in seeds]
        lines.append(f"| {_run_label(col)} | " + " | ".join(cells) + " |")
    devices = device_differences(columns)
    if devices:
        lines += ["", "## Between devices\n", "Per framework version, mode, backend and api run on the cpu and an "
                  "accelerator: the cases whose verdict or explaining variants differ.\n",
                  "| run | accelerator | cases that differ |", "|---|---|---|"]
        for d in devices:
            ids = ", ".join(f"`{_md(ch['id'])}`" for ch in d["cases"]) or "none"
            lines.append(f"| {_run_label(d['run'])} | {_md(d['run'].doc.environment.accelerator or 'not named')} | {ids} |")
    lines += ["", "## Profiles\n", "Per variant and run: ◆ documented (◇ no upstream page), and how many of the "
              "run's divergences needed it.\n", profiles_markdown(columns)]
    return "\n".join(lines)


def profiles_markdown(columns: list[Column]) -> str:
    """The profile table as Markdown, for findings.md."""
    runs = [c for c in columns if c.doc]
    head = "| variant | " + " | ".join(_run_label(c) for c in runs) + " |"
    lines = [head, "|---" * (len(runs) + 1) + "|"]
    for row in profile_table(columns):
        cells = []
        for col in runs:
            cell = row["cells"][col.key]
            if cell is None:
                cells.append("")
            else:
                href = safe_href(cell["entry"].link) if cell["entry"].link else None
                mark = f"[◆]({href.replace('(', '%28').replace(')', '%29')})" if href else "◆" if cell["entry"].link else "◇"
                cells.append(f"{mark} ×{cell['needed']}")
        lines.append(f"| `{row['name']}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _no_formula(value):
    """A CSV cell a spreadsheet shows as text: one from results that starts like a formula (=, +, -,
    @, or a tab or carriage return before one) gets a leading quote."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def build(results_dirs=(Path("reports/results"),), out_dir: Path = Path("reports"), spec_dir=None,
          bench_dir: Path | None = Path(".asv/results")) -> Path:
    """Write index.html and summary.csv to out_dir (OutputError if it cannot). Inputs that cannot be
    used are left out with a one-line warning, on stderr and at the top of the page."""
    warnings = []

    def warn(message):
        message = one_line(message)
        print(f"warning: {message}", file=sys.stderr)
        warnings.append(message)

    if isinstance(results_dirs, (str, Path)):
        results_dirs = [results_dirs]
    columns = load_columns([Path(d) for d in results_dirs], Path(out_dir), warn)
    table = long_table(columns)
    rows = case_rows(columns, spec_dir or SPEC_DIR)
    bench = load_benchmarks(bench_dir, warn) if bench_dir else None
    env = TEMPLATES
    built, counts, seeds = (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                            summary_counts(table, columns), _grouped(rows[rows.topic == "seeds"]))
    page = env.get_template("report.html").render(
        built=built,
        suite=next((c.doc.environment.suite_sha for c in columns if c.doc), results.suite_sha()),
        columns=columns, counts=counts, cells=_cells(table, columns), legend=CELL, flagged=mostly_errors(counts),
        warnings=warnings, summary_csv=PurePosixPath("summary.csv"),
        undocumented=table[table.cell == "divergence"].to_dict("records"),
        profiles=profile_table(columns), porting=porting_notes(columns), changes=version_changes(columns),
        executions=execution_differences(columns), devices=device_differences(columns), defaults=defaults_table(columns),
        seeds=seeds,
        topics=[(topic, _grouped(part)) for topic, part in rows.groupby("topic", sort=False)],
        bench_plot=plot_benchmarks(bench) if bench is not None else None,
        bench_table=relative_table(bench).to_html(float_format="%.2f", na_rep="") if bench is not None else "")
    out = Path(out_dir) / "index.html"
    csv = table.map(_no_formula) if hasattr(table, "map") else table.applymap(_no_formula)
    files = {"findings.md": findings_markdown(columns, counts, seeds, built),
             "summary.csv": csv.to_csv(index=False), "index.html": page}
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if not out.parent.is_dir():
            raise FileExistsError
        for name, text in files.items():
            write_atomic(out.parent / name, text)
    except FileExistsError:
        raise OutputError("exists and is not a folder") from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename and Path(exc.filename) != Path(out_dir) else ""
        raise OutputError(f"{where}{exc.strerror or exc}") from None
    return out
