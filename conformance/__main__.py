"""Command line: python -m conformance list | run | repro | report | docs | audit.

Exit status: 0 when the run completed (divergences are findings, not failures); 2 for bad
arguments, a malformed spec or results file, or a --out that another run is writing; 3 when
the framework, device, mode, api or backend is not available here; 4 when the framework worker cannot start;
130 / 143 / 129 when stopped by SIGINT / SIGTERM / SIGHUP (the cases finished so far are written,
marked incomplete); 5, whatever else happened, when the results could not be saved at the end
(the file keeps the last version that was saved). `repro` exits 1 when the framework raised (the
one-line error is what it shows); `docs --check` exits 1 when a generated page differs. `audit` has its own statuses (auditor/cli.py).

This module reads the command line; a run's lock, resume, saves and stop signals are session.py's.
"""
from __future__ import annotations

import argparse
import math
import socket
import sys
from collections import Counter
from pathlib import Path

from . import results, session
from .engine.judge import DEFAULT_TIMEOUT, explain, observe_safely, remembered_oracle
from .engine.ranks import GroupFailed, Nodes, Ranks
from .engine.worker import WorkerFailed
from .kernel.lines import say
from .kernel.processes import contain, end_run, tag_run
from .oracle.known import RUNNERS_DIR, load_known, profile
from .run import AXES, Run
from .runners import FRAMEWORKS, ROOMS, FrameworkMissing, Unavailable, adapter_path, offers
from .session import Interrupted, UsageError
from .spec import SPEC_DIR, SpecError, load_spec

MAX_TIMEOUT = 3600.0  # seconds; --timeout beyond this is a typo, not a plan


def _timeout(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= MAX_TIMEOUT:  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected seconds in (0, {MAX_TIMEOUT:g}], got {text!r}")
    return seconds


def _count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 64, got {text!r}")
    return int(text)


def _adapter(args) -> str:
    """--adapter MODULE:CLASS, or the framework's own for the run asked for."""
    if args.adapter is None:
        return adapter_path(args.framework, _requested(args))
    module, _, name = args.adapter.partition(":")
    if not module or not name or ":" in name:
        raise UsageError(f"--adapter {args.adapter!r}: expected MODULE:CLASS")
    return args.adapter


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
            say(f"{inst.id:60} {inst.topic:16} {inst.case.title}")
        elif inst.case.id not in shown:
            shown.add(inst.case.id)
            say(f"{inst.case.id:42} {inst.topic:16} {by_case[inst.case.id]:3}x  {inst.case.title}")
    say(f"{len(by_case)} cases, {len(instances)} instances", sys.stderr)
    return 0


def cmd_report(args) -> int:
    from .report.page import OutputError, build  # pandas, jinja2 and matplotlib: only the report env has them
    if args.out == "":
        raise UsageError("--out: empty path")
    if args.results is None:
        args.results = results.results_dirs()
    missing = [str(folder) for folder in args.results if not Path(folder).is_dir()]
    try:
        out = build(args.results, Path(args.out), args.spec, args.bench)
    except OutputError as exc:
        raise UsageError(f"report --out {args.out}: {exc}") from None
    say(f"report: {out} and {out.parent / 'summary.csv'}")
    if missing:  # the other folders' runs are on the page; the command still fails
        raise UsageError(f"report --results {missing[0]}: no such folder (the page shows the other folders)")
    return 0


def cmd_publish(args) -> int:
    from .report.page import OutputError
    from .report.site import publish  # pandas and jinja2: only the report env has them
    if str(args.out) in ("", "."):
        raise UsageError("publish --out: name a folder for the site")
    # the site itself may be new: its first publish starts its history
    if args.history is not None and not args.history.is_dir() and args.history.resolve() != args.out.resolve():
        raise UsageError(f"publish --history {args.history}: no such folder (name the site published before)")
    folders = args.results if args.results is not None else results.results_dirs()
    missing = [str(folder) for folder in folders if not Path(folder).is_dir()]
    try:
        index = publish(folders, Path(args.out), args.spec, args.history, args.asv, args.confirm)
    except OutputError as exc:
        raise UsageError(f"publish --out {args.out}: {exc}") from None
    say(f"publish: {index} (serve it with `python -m http.server -d {args.out}`, or open it as a file)")
    if missing:
        raise UsageError(f"publish --results {missing[0]}: no such folder (the site shows the other folders)")
    return 0


def cmd_confirm(args) -> int:
    from .confirm import confirm, failed
    from .runners import load_adapter
    try:
        version = load_adapter(adapter_path(args.framework), args.framework).version()
    except FrameworkMissing as exc:
        raise UsageError(str(exc)) from None
    path = confirm(args.framework, version, args.out, say=say)
    say(f"confirm: {path}")
    if failed(path):
        raise UsageError(f"confirm: {', '.join(failed(path))} did not confirm on {args.framework} {version} "
                         f"(their output is in {path})")
    return 0


def _requested(args) -> Run:
    """The run the command line asks for: its framework and the axes given as options (AXES)."""
    return Run(args.framework, **{axis.name: getattr(args, axis.name) or "" for axis in AXES if axis.option})


def _nodes(args) -> Nodes:
    """The hosts --nodes and --node-address ask a data-parallel run's ranks to spread over."""
    nodes = Nodes(args.nodes, args.node_address)
    replicas = int(args.replicas or "1")
    if nodes.count > 1 and (replicas == 1 or replicas % nodes.count):
        raise UsageError(f"--nodes {nodes.count}: the replicas (--replicas {replicas}) must split evenly over the "
                         f"nodes, one or more each")
    if nodes.count > 1 and not nodes.here:
        if len(nodes.address) > 253:  # DNS's limit; the resolver's own error for longer names is a traceback
            raise UsageError(f"--node-address {nodes.address[:40]}...: longer than a host name can be (253 characters)")
        try:
            socket.getaddrinfo(nodes.address, None)
        except (OSError, UnicodeError) as exc:  # UnicodeError: a label over 63 characters (idna)
            raise UsageError(f"--node-address {nodes.address}: {getattr(exc, 'strerror', None) or exc}") from None
    return nodes


def cmd_docs(args) -> int:
    """Write docs/*.md from the committed inputs, or with --check list the pages that differ."""
    from .report import docs
    if args.check:
        stale = docs.stale(args.out)
        for name in stale:
            say(f"{args.out / name}: differs from what `python -m conformance docs` writes", sys.stderr)
        return 1 if stale else 0
    for path in docs.write(args.out):
        say(f"wrote {path}")
    return 0


def cmd_repro(args) -> int:
    """One instance in this process, printed step by step beside the reference (no isolation)."""
    from .engine.scenario import observe
    from .engine.verdict import trace
    from .oracle.reference import ReferenceRunner
    from .runners import load_adapter
    chosen = _select(load_spec(args.spec), None, [args.case])
    if len(chosen) > 1:
        raise UsageError(f"{args.case!r} has {len(chosen)} instances; name one, e.g. {chosen[0].id!r}")
    instance = chosen[0]
    path = _adapter(args)
    adapter = load_adapter(path, args.framework)
    requested = _requested(args)
    launcher = adapter.parallelism.launcher(1) if adapter.parallelism and requested.replicas != "1" else None
    if launcher is not None:  # a data-parallel run whose ranks its launcher starts, as `run` starts them
        kind, observed, run = _repro_in_ranks(launcher, path, adapter.offers.resolve(requested), instance)
    else:
        runner = adapter(requested)
        run = runner.run.replace(version=adapter.version())
        kind, observed = observe_safely(runner, instance.case)
    say(f"{instance.id} on {run.describe()}")
    say(f"  {instance.case.title}  [{instance.source}]")
    if kind == "unsupported":
        say(f"unsupported: {observed}")
        return 0
    if kind != "ok":  # the framework's (or the adapter's, or a rank's) failure is what repro shows
        say(f"error: {observed}", sys.stderr)
        return 1
    reference = observe(ReferenceRunner(), instance.case)
    say(trace(instance, observed, reference))
    variants = profile(load_known(args.framework, args.known), run)
    needed, miss = explain(instance, observed, reference, variants)
    names = ", ".join(v.variant for v in variants) or "none"
    if miss:
        say(f"profile ({names}) does not reproduce it: {miss}")
    else:
        say(f"profile ({names}) reproduces every check; needed: {', '.join(v.variant for v in needed) or 'none'}")
    return 0


def _repro_in_ranks(launcher, path: str, run, instance):
    """(kind, observation or why, the run with its version) of one data-parallel instance, observed by a rank
    group of this process; its processes and logs end with it."""
    contain()
    tag = tag_run()
    group = Ranks(launcher, path, run)
    try:
        version, backend, _, _ = group.start()
        kind, observed = group.observe(instance.case, instance.case.timeout or DEFAULT_TIMEOUT)
    except GroupFailed as exc:
        kind, observed, version, backend = "error", f"the rank group did not start: {exc}", run.version, run.backend
    finally:
        group.close()
        end_run(tag)
    return kind, observed, run.replace(version=version, backend=backend or run.backend)


def cmd_run(args) -> int:
    if args.every_run:
        return _every_run(args)
    chosen = None if args.out is None else session.out_file(args.out)  # a bad --out fails before the import
    path = _adapter(args)
    nodes = _nodes(args)
    return session.run(args, _requested(args), path, nodes, chosen, lambda spec: _select(spec, args.k, args.case))


def _every_run(args) -> int:
    """--every-run: each run the framework's room offers on --device, one after the other, each to its
    own results file. A run that cannot start is said in one line and the others still run; the exit
    status is the first failing run's (a stop signal ends them all). The runs share the oracle's
    observations: each is computed once for all of them."""
    for axis in AXES:
        if axis.option and axis.name != "device" and getattr(args, axis.name) not in (None, axis.default):
            raise UsageError(f"--every-run takes no --{axis.name}: it runs every one its room offers")
    if args.out or args.resume or args.only_errors:
        raise UsageError("--every-run writes each run to its own default file: no --out, --resume or --only-errors")
    runs = offers(args.framework).every_run(args.framework, args.device)
    with remembered_oracle():
        return _each_run(args, runs)


def _each_run(args, runs) -> int:
    status = 0
    for n, run in enumerate(runs, 1):
        say(f"== run {n} of {len(runs)}: {args.framework} {run.execution}")
        axes = {axis.name: getattr(run, axis.name) or None for axis in AXES if axis.option and axis.name != "device"}
        one = argparse.Namespace(**{**vars(args), "every_run": False, "within_every_run": True, **axes,
                                    "nodes": args.nodes if run.replicas != "1" else 1})
        try:
            code = cmd_run(one)
        except (SpecError, UsageError) as exc:
            say(f"error: {exc}", sys.stderr)
            code = 2
        except (FrameworkMissing, Unavailable) as exc:
            say(f"error: {exc}", sys.stderr)
            code = 3
        except WorkerFailed as exc:
            say(f"error: {exc}", sys.stderr)
            code = 4
        if code in (130, 143, 129):
            return code
        status = status or code
    return status


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        say(f"error: {message} (see `{self.prog} --help`)", sys.stderr)
        sys.exit(2)


def _run_axes(parser) -> None:
    """--framework and one option per command-line axis of run.AXES."""
    parser.add_argument("--framework", required=True, choices=FRAMEWORKS)
    for axis in AXES:
        if axis.option:
            default = axis.default or None
            parser.add_argument(f"--{axis.name}", default=default, choices=axis.values,
                                metavar=None if axis.values else "NAME",
                                help=axis.help + (f" (default {default})" if default else ""))


def main(argv=None) -> int:
    parser = _Parser(prog="python -m conformance", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=SPEC_DIR, help="folder of spec YAML files")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p_list = sub.add_parser("list", help="list cases: id, topic, instances, title")
    p_list.add_argument("-k", metavar="SUBSTRING", help="only ids containing SUBSTRING")
    p_list.add_argument("--instances", action="store_true", help="one line per matrix instance")
    p_run = sub.add_parser("run", help="run the spec on one framework and write its results file")
    _run_axes(p_run)
    p_run.add_argument("--every-run", action="store_true",
                       help="every run the framework's room offers on --device, each to its own results file")
    p_run.add_argument("--nodes", type=_count, default=1, metavar="N",
                       help="a data-parallel run's ranks spread over N hosts, each started by the framework's "
                            "launcher with its multi-node flags (default 1; docs/data-parallel.md, Several hosts)")
    p_run.add_argument("--node-address", default="127.0.0.1", metavar="HOST",
                       help="this host as the other nodes reach it (default 127.0.0.1: every node starts here)")
    p_run.add_argument("-k", metavar="SUBSTRING", help="only instance ids containing SUBSTRING")
    p_run.add_argument("--case", action="append", metavar="ID",
                       help="only this case (base or instance id); repeatable")
    p_run.add_argument("--timeout", type=_timeout, metavar="SECONDS",
                       help="per-case time limit, overriding the spec's (default %g s, at most %g s)"
                            % (DEFAULT_TIMEOUT, MAX_TIMEOUT))
    p_run.add_argument("--out", help="results file (default reports/results/<framework>-<version>-<device>-<mode>[+<backend>]-<api>.json)")
    p_run.add_argument("--known", type=Path, default=RUNNERS_DIR,
                       help="folder of framework rooms, each with <framework>/known.yaml (default: the suite's own)")
    p_run.add_argument("--adapter", metavar="MODULE:CLASS",
                       help="run this adapter class instead of the framework's own (adapters in development)")
    again = p_run.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="keep the finished cases of the results file at --out, run the rest")
    again.add_argument("--only-errors", action="store_true",
                       help="re-run only the cases recorded as error in the results file at --out")
    p_repro = sub.add_parser("repro", help="run one instance in-process and print it step by step")
    p_repro.add_argument("case", metavar="ID", help="instance id (or a base id with a single instance)")
    _run_axes(p_repro)
    p_repro.add_argument("--adapter", metavar="MODULE:CLASS", help="adapter class to use instead")
    p_repro.add_argument("--known", type=Path, default=RUNNERS_DIR, help="folder of framework rooms (<framework>/known.yaml)")
    p_report = sub.add_parser("report", help="build reports/index.html and summary.csv from all results")
    p_report.add_argument("--results", type=Path, nargs="+", default=None,
                          help="results folders to merge; each file is a run (default: reports/results and "
                               "each folder in reports/machines, results fetched from other machines)")
    p_report.add_argument("--bench", type=Path, default=Path(".asv/results"), help="asv results folder")
    p_report.add_argument("--out", default="reports", help="folder for index.html and summary.csv")
    p_publish = sub.add_parser("publish", help="write the results as a static site (landing page, a page per case, data)")
    p_publish.add_argument("--results", type=Path, nargs="+", default=None,
                           help="results folders (default: reports/results and each folder in reports/machines)")
    p_publish.add_argument("--out", type=Path, default=Path("reports/site"), help="the site's folder (default reports/site)")
    p_publish.add_argument("--asv", type=Path, default=Path("reports/asv"), metavar="DIR",
                           help="asv publish's site, copied to SITE/asv where present (default reports/asv)")
    p_publish.add_argument("--confirm", type=Path, default=Path("reports/confirm"), metavar="DIR",
                           help="what `conformance confirm` recorded: the findings page shows it (default reports/confirm)")
    p_publish.add_argument("--history", type=Path, default=None, metavar="SITE",
                           help="a site published before (--out itself allowed): keep its history, show what changed since")
    p_confirm = sub.add_parser("confirm", help="run the snippets of the variants no upstream page states; keep what they print")
    p_confirm.add_argument("--framework", required=True, choices=ROOMS, help="the room whose findings to run")
    p_confirm.add_argument("--out", type=Path, default=Path("reports/confirm"),
                           help="folder for <framework>-<version>.json (default reports/confirm)")
    p_docs = sub.add_parser("docs", help="write docs/*.md (vocabulary, cases, variants, rooms) from the committed inputs")
    p_docs.add_argument("--out", type=Path, default=None, help="folder (default: the checkout's docs/)")
    p_docs.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each page that differs")
    from .auditor.cli import add_parser as add_audit, cmd_audit
    add_audit(sub)
    from .matrix import add_parser as add_matrix, cmd_matrix
    add_matrix(sub)
    from .semantics import add_parser as add_semantics, cmd_semantics
    add_semantics(sub)
    from .lint import add_parser as add_lint, cmd_lint
    add_lint(sub)
    args = parser.parse_args(argv)
    if args.command == "docs" and args.out is None:
        from .report.docs import DOCS_DIR
        args.out = DOCS_DIR
    try:
        return {"list": cmd_list, "run": cmd_run, "repro": cmd_repro, "report": cmd_report,
                "publish": cmd_publish, "confirm": cmd_confirm, "docs": cmd_docs, "audit": cmd_audit, "matrix": cmd_matrix,
                "semantics": cmd_semantics, "lint": cmd_lint}[args.command](args)
    except (SpecError, UsageError) as exc:
        say(f"error: {exc}", sys.stderr)
        return 2
    except (FrameworkMissing, Unavailable) as exc:
        say(f"error: {exc}", sys.stderr)
        return 3
    except WorkerFailed as exc:
        say(f"error: {exc}", sys.stderr)
        return 4
    except (KeyboardInterrupt, Interrupted) as exc:  # before any case ran: nothing to write
        say("error: interrupted", sys.stderr)
        return exc.status if isinstance(exc, Interrupted) else 130


if __name__ == "__main__":
    sys.exit(main())
