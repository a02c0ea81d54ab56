"""Command line: python -m conformance list | run.

Exit status: 0 when the run completed (divergences are findings, not failures); 2 for bad
arguments or a malformed spec; 3 when the framework or device is not available here.
"""
from __future__ import annotations

import argparse
import datetime
import sys
import time
from collections import Counter
from pathlib import Path

from . import results
from .execute import run_all
from .runners import DEVICES, FRAMEWORKS, DeviceUnavailable, FrameworkMissing, load_adapter
from .schema import KNOWN_DIR, SPEC_DIR, SpecError, load_known, load_spec


class UsageError(Exception):
    """Bad command-line input; the message is one line."""


def _select(instances, substring):
    if not substring:
        return instances
    chosen = [i for i in instances if substring in i.id]
    if not chosen:
        raise UsageError(f"no case id contains {substring!r} (see `python -m conformance list`)")
    return chosen


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


def cmd_run(args) -> int:
    instances = _select(load_spec(args.spec), args.k)
    known = load_known(args.framework, args.known)
    adapter = load_adapter(args.framework)
    runner = adapter(args.device)
    version = adapter.version()
    out = Path(args.out or f"reports/results/{args.framework}.json")
    now = lambda: datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    doc = results.Results(environment=results.environment(
        args.framework, version, args.device, runner.mode, args.spec, now()))
    try:
        results.write(doc, out)  # fail now, not after the run, if the path is unwritable
    except OSError as exc:
        raise UsageError(f"cannot write results to {out}: {exc.strerror}") from None
    print(f"{args.framework} {version} on {args.device} ({runner.mode}): {len(instances)} instances")
    start, width = time.perf_counter(), len(str(len(instances)))

    def on_result(record):
        doc.cases.append(record)
        tag = record.verdict + (" (documented)" if record.documented else "")
        line = f"[{len(doc.cases):{width}}/{len(instances)}] {tag:24} {record.id}"
        if record.verdict != "conform":
            line += f"  -- {record.reason}"
        print(line, flush=True)

    run_all(runner, instances, version, known, on_result)
    doc.complete, doc.environment.finished = True, now()
    summary = doc.summarize()
    results.write(doc, out)
    counts = ", ".join(f"{summary.get(v, 0)} {v}" for v in ("conform", "divergence", "error", "unsupported"))
    print(f"{args.framework}: {counts} ({summary['documented']} documented divergences); "
          f"{time.perf_counter() - start:.1f} s; results in {out}")
    return 0


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
    p_run.add_argument("-k", metavar="SUBSTRING", help="only instance ids containing SUBSTRING")
    p_run.add_argument("--out", help="results file (default reports/results/FRAMEWORK.json)")
    p_run.add_argument("--known", type=Path, default=KNOWN_DIR, help="folder of known-divergence files")
    args = parser.parse_args(argv)
    try:
        return cmd_list(args) if args.command == "list" else cmd_run(args)
    except (SpecError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (FrameworkMissing, DeviceUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
