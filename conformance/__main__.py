"""Command line: python -m conformance list | run.

Exit status: 0 when the run completed (divergences are findings, not failures); 2 for bad
arguments or a malformed spec; 3 when the framework, device or mode is not available here;
4 when the framework worker cannot start; 130 / 143 when interrupted by SIGINT / SIGTERM
(the cases finished so far are written, marked incomplete).
"""
from __future__ import annotations

import argparse
import datetime
import signal
import sys
import time
from collections import Counter
from pathlib import Path

from . import results
from .execute import DEFAULT_TIMEOUT, Worker, WorkerFailed, run_isolated
from .runners import DEVICES, FRAMEWORKS, MODES, FrameworkMissing, Unavailable, adapter_path
from .schema import KNOWN_DIR, SPEC_DIR, SpecError, load_known, load_spec

SAVE_EVERY = 5.0  # seconds between saves of a run in progress


class UsageError(Exception):
    """Bad command-line input; the message is one line."""


class Interrupted(Exception):
    """SIGTERM arrived; handled like Ctrl-C."""


def _select(instances, substring=None, ids=None):
    if ids:
        known = {i.id for i in instances} | {i.case.id for i in instances}
        for wanted in ids:
            if wanted not in known:
                raise UsageError(f"unknown case id {wanted!r} (see `python -m conformance list --instances`)")
        instances = [i for i in instances if i.id in ids or i.case.id in ids]
    if substring:
        instances = [i for i in instances if substring in i.id]
        if not instances:
            raise UsageError(f"no case id contains {substring!r} (see `python -m conformance list`)")
    return instances


def cmd_list(args) -> int:
    instances = _select(load_spec(args.spec), args.k)
    by_case = Counter(i.case.id for i in instances)
    shown = set()
    for inst in instances:
        if args.instances:
            print(f"{inst.id:60} {inst.topic:16} {inst.case.title}")
        elif inst.case.id not in shown:
            shown.add(inst.case.id)
            print(f"{inst.case.id:42} {inst.topic:16} {by_case[inst.case.id]:3}x  {inst.case.title}")
    print(f"{len(by_case)} cases, {len(instances)} instances", file=sys.stderr)
    return 0


def cmd_report(args) -> int:
    from .report import OutputError, build  # pandas, jinja2 and matplotlib: only the report env has them
    try:
        out = build(args.results, args.out, args.spec, args.bench)
    except OutputError as exc:
        raise UsageError(f"report --out {args.out}: {exc}") from None
    print(f"report: {out} and {out.parent / 'summary.csv'}")
    return 0


def cmd_repro(args) -> int:
    """One instance in this process, printed step by step beside the reference (no isolation)."""
    from .reference import ReferenceRunner
    from .runners import load_adapter
    from .scenario import observe
    from .verdict import trace
    chosen = _select(load_spec(args.spec), None, [args.case])
    if len(chosen) > 1:
        raise UsageError(f"{args.case!r} has {len(chosen)} instances; name one, e.g. {chosen[0].id!r}")
    instance = chosen[0]
    adapter = load_adapter(args.adapter or adapter_path(args.framework), args.framework)
    runner = adapter(args.device, args.mode)
    print(f"{instance.id} on {args.framework} {adapter.version()} ({args.device}, {runner.mode})")
    print(f"  {instance.case.title}  [{instance.source}]")
    print(trace(instance, observe(runner, instance.case), observe(ReferenceRunner(), instance.case)))
    return 0


def _previous(out: Path, args, version: str, spec_hash: str) -> results.Results:
    """The results file a --resume / --only-errors run continues; it must match this run."""
    flag = "--resume" if args.resume else "--only-errors"
    try:
        doc = results.read(out)
    except FileNotFoundError:
        raise UsageError(f"{flag}: no results file at {out}") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{flag}: cannot read {out}: {str(exc).splitlines()[0]}") from None
    env = doc.environment
    for what, theirs, ours in (("framework", env.framework, args.framework), ("device", env.device, args.device),
                               ("mode", env.mode, args.mode), ("framework version", env.framework_version, version),
                               ("spec hash", env.spec_hash, spec_hash)):
        if theirs != ours:
            raise UsageError(f"{flag}: {out} has {what} {theirs}, this run {ours}; run without {flag}")
    return doc


def cmd_run(args) -> int:
    out = Path(args.out or f"reports/results/{args.framework}.json")
    if args.adapter and ":" not in args.adapter:
        raise UsageError(f"--adapter {args.adapter!r}: expected MODULE:CLASS")
    path = args.adapter or adapter_path(args.framework)
    workers = [Worker(args.framework, path, args.device, args.mode)]  # the framework imports while the spec loads

    def new_worker():
        workers.append(Worker(args.framework, path, args.device, args.mode))
        return workers[-1]

    def on_sigterm(signum, frame):
        raise Interrupted()

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        selected = _select(load_spec(args.spec), args.k, args.case)
        order = {inst.id: n for n, inst in enumerate(selected)}
        known = load_known(args.framework, args.known)
        version, mode = workers[0].start()
        now = lambda: datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        doc = results.Results(environment=results.environment(
            args.framework, version, args.device, mode, args.spec, now()))
        todo = selected
        if args.resume or args.only_errors:
            previous = _previous(out, args, version, doc.environment.spec_hash)
            doc.cases = [c for c in previous.cases if c.id in order
                         and not (args.only_errors and c.verdict == "error")]
            done = {c.id for c in doc.cases}
            todo = [inst for inst in selected if inst.id not in done]
        try:
            results.write(doc, out)  # fail now, not after the run, if the path is unwritable
        except OSError as exc:
            raise UsageError(f"cannot write results to {out}: {exc.strerror}") from None
        print(f"{args.framework} {version} on {args.device} ({mode}): {len(todo)} instances to run"
              + (f", {len(doc.cases)} kept from {out}" if doc.cases else ""), flush=True)
        start, width = time.perf_counter(), len(str(len(todo)))
        ran, saved = 0, time.monotonic()

        def on_result(record):
            nonlocal ran, saved
            doc.cases.append(record)
            ran += 1
            tag = record.verdict + (" (documented)" if record.documented else "")
            line = f"[{ran:{width}}/{len(todo)}] {tag:24} {record.id}"
            print(line + (f"  -- {record.reason}" if record.verdict != "conform" else ""), flush=True)
            if time.monotonic() - saved > SAVE_EVERY:
                results.write(doc, out)
                saved = time.monotonic()

        def save(complete: bool):
            doc.cases.sort(key=lambda c: order[c.id])
            doc.complete = complete
            if complete:
                doc.environment.finished = now()
            summary = doc.summarize()
            results.write(doc, out)
            return summary

        try:
            run_isolated(workers[0], new_worker, todo, version, known, args.timeout, on_result)
        except (KeyboardInterrupt, Interrupted) as exc:
            save(complete=False)
            print(f"interrupted: {len(doc.cases)} of {len(order)} cases written to {out} (incomplete)",
                  file=sys.stderr)
            return 143 if isinstance(exc, Interrupted) else 130
        except WorkerFailed:
            save(complete=False)
            raise
        summary = save(complete=True)
        counts = ", ".join(f"{summary.get(v, 0)} {v}" for v in ("conform", "divergence", "error", "unsupported"))
        print(f"{args.framework}: {counts} ({summary['documented']} documented divergences); "
              f"{time.perf_counter() - start:.1f} s; results in {out}")
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for worker in workers:
            worker.close()


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        print(f"error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(2)


def main(argv=None) -> int:
    parser = _Parser(prog="python -m conformance", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=SPEC_DIR, help="folder of spec YAML files")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p_list = sub.add_parser("list", help="list cases: id, topic, instances, title")
    p_list.add_argument("-k", metavar="SUBSTRING", help="only ids containing SUBSTRING")
    p_list.add_argument("--instances", action="store_true", help="one line per matrix instance")
    p_run = sub.add_parser("run", help="run the spec on one framework and write its results file")
    p_run.add_argument("--framework", required=True, choices=FRAMEWORKS)
    p_run.add_argument("--device", default="cpu", choices=DEVICES)
    p_run.add_argument("--mode", default="eager", choices=MODES, help="execution mode (default eager)")
    p_run.add_argument("-k", metavar="SUBSTRING", help="only instance ids containing SUBSTRING")
    p_run.add_argument("--case", action="append", metavar="ID",
                       help="only this case (base or instance id); repeatable")
    p_run.add_argument("--timeout", type=float, metavar="SECONDS",
                       help="per-case time limit, overriding the spec's (default %g s)" % DEFAULT_TIMEOUT)
    p_run.add_argument("--out", help="results file (default reports/results/FRAMEWORK.json)")
    p_run.add_argument("--known", type=Path, default=KNOWN_DIR, help="folder of known-divergence files")
    p_run.add_argument("--adapter", metavar="MODULE:CLASS",
                       help="run this adapter class instead of the framework's own (adapters in development)")
    again = p_run.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="keep the finished cases of the results file at --out, run the rest")
    again.add_argument("--only-errors", action="store_true",
                       help="re-run only the cases recorded as error in the results file at --out")
    p_repro = sub.add_parser("repro", help="run one instance in-process and print it step by step")
    p_repro.add_argument("case", metavar="ID", help="instance id (or a base id with a single instance)")
    p_repro.add_argument("--framework", required=True, choices=FRAMEWORKS)
    p_repro.add_argument("--device", default="cpu", choices=DEVICES)
    p_repro.add_argument("--mode", default="eager", choices=MODES)
    p_repro.add_argument("--adapter", metavar="MODULE:CLASS", help="adapter class to use instead")
    p_report = sub.add_parser("report", help="build reports/index.html and summary.csv from all results")
    p_report.add_argument("--results", type=Path, default=Path("reports/results"), help="results folder")
    p_report.add_argument("--bench", type=Path, default=Path(".asv/results"), help="asv results folder")
    p_report.add_argument("--out", type=Path, default=Path("reports"), help="where index.html goes")
    args = parser.parse_args(argv)
    try:
        return {"list": cmd_list, "run": cmd_run, "repro": cmd_repro, "report": cmd_report}[args.command](args)
    except (SpecError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (FrameworkMissing, Unavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except WorkerFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    except (KeyboardInterrupt, Interrupted) as exc:  # before any case ran: nothing to write
        print("error: interrupted", file=sys.stderr)
        return 143 if isinstance(exc, Interrupted) else 130


if __name__ == "__main__":
    sys.exit(main())
