"""The run's session: one `run` from its first worker to its last save.

It holds the results file's lock for the whole run, continues a results file (--resume, --only-errors),
saves the finished cases every SAVE_EVERY seconds and at the end, and turns the first stop signal into a
clean stop. Its exit status: 0 when the run completed; 4 when a worker could not start again; 5
(NOT_SAVED) when the results could not be saved at the end; 128 + the signal's number when stopped (the
finished cases written, marked incomplete). What stops a run before its first case is raised for the
command line to say in one line: UsageError, a SpecError, FrameworkMissing or Unavailable, WorkerFailed,
Interrupted.
"""
from __future__ import annotations

import datetime
import os
import signal
import stat
import sys
import time
from pathlib import Path
from typing import Callable

from . import results
from .engine.ranks import Nodes
from .engine.worker import Worker, WorkerFailed, run_isolated
from .kernel import files
from .kernel.lines import say
from .kernel.processes import contain, end_run, tag_run
from .oracle.known import load_known, profile
from .run import AXES, Run, takes
from .runners import offers
from .spec import Instance, load_spec

SAVE_EVERY = 5.0  # seconds between saves of a run in progress
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
NOT_SAVED = 5  # exit status: the results could not be saved


class UsageError(Exception):
    """Bad command-line input; the message is one line."""


class Interrupted(BaseException):
    """A stop signal arrived. Not an Exception, like KeyboardInterrupt: no `except Exception` (the
    oracle's, an adapter's) may take it for the failure of the case in flight."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.status = 128 + signum


KINDS = {"d": "directory", "l": "symbolic link", "p": "FIFO", "c": "character device", "b": "block device",
         "s": "socket"}


def out_file(text: str) -> Path:
    """run's results file: a regular file or a new path; never a link, FIFO or device, which the
    rename would replace."""
    if text == "":
        raise UsageError("--out: empty path")
    out = Path(text)
    try:
        mode = os.lstat(out).st_mode
    except FileNotFoundError:
        return out
    except OSError as exc:
        raise UsageError(f"cannot write results to {out}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise UsageError(f"--out {out} is a {KINDS.get(stat.filemode(mode)[0], 'special file')}; "
                         "give a regular file or a new path")
    return out


def run(args, requested: Run, path: str, nodes: Nodes, chosen: Path | None,
        select: Callable[[list[Instance]], list[Instance]]) -> int:
    """The run the command line asks for (`requested`, on the adapter at `path`), to `chosen` or its
    default results file; select(spec) is the instances it asks for."""
    armed = [True]

    def on_signal(signum, frame):
        if armed:  # only the first stops the run: later ones must not cut short the save that follows
            armed.clear()
            raise Interrupted(signum)

    previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}

    def new_worker():
        workers.append(Worker(requested, path, nodes))
        return workers[-1]

    workers = []
    contain()  # whatever the run starts ends with it, even after a SIGKILL, where a cgroup can be made
    tag = tag_run()
    new_worker()  # the framework imports while the spec loads

    try:
        spec = load_spec(args.spec)
        selected = select(spec)
        known = load_known(args.framework, args.known)
        run = workers[0].start()
        # the run's own cases: a data-parallel case runs only in the runs of its replicas, and the others in none;
        # asked for none, a smoke run runs its smoke subset
        ours = [i for i in selected if takes(run, i.case)]
        if not (getattr(args, "k", None) or getattr(args, "case", None)):
            ours = offers(run.framework).instances(run, spec)
        if selected and not ours and getattr(args, "within_every_run", False):
            say(f"{run.describe()}: none of the instances asked for runs in it")
            return 0
        if selected and not ours:
            raise UsageError(f"none of the {len(selected)} instances asked for runs with --replicas {run.replicas}: "
                             f"{selected[0].id} trains on {selected[0].case.replicas} (--replicas "
                             f"{selected[0].case.replicas})")
        spec, selected = [i for i in spec if takes(run, i.case)], ours
        # one file per run, named by its axes: another version, device, mode or api never overwrites it
        out = chosen or out_file(str(results.RESULTS_DIR / f"{run.name}.json"))
        try:
            lock = files.lock(out)
        except files.Busy as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot write results to {out}: {exc.strerror}") from None
        try:
            if chosen is not None and not (args.resume or args.only_errors):
                _replaceable(out, run)
            return _run(args, out, workers, new_worker, spec, selected, profile(known, run), run,
                        disarm=armed.clear)
        finally:
            files.unlock(out, lock)
    finally:
        for worker in workers:
            worker.close()
        end_run(tag)  # what the workers started outside their process group, and their temporary files
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


def _replaceable(out: Path, run: Run) -> None:
    """--out may replace a results file of this very run (a run again), nothing else."""
    if not out.exists():
        return
    try:
        theirs = results.read(out).environment.run
    except (OSError, ValueError):
        raise UsageError(f"--out {out} exists and is not a results file; remove it or give another path") from None
    if theirs != run:
        raise UsageError(f"--out {out} holds the results of {theirs.describe()}, not {run.describe()}; "
                         "remove it or give another path")


def _previous(out: Path, args, run: Run, spec_hash: str) -> results.Results:
    """The results file a --resume / --only-errors run continues; it must hold this very run."""
    flag = "--resume" if args.resume else "--only-errors"
    try:
        doc = results.read(out)
    except FileNotFoundError:
        raise UsageError(f"{flag}: no results file at {out}") from None
    except OSError as exc:
        raise UsageError(f"{flag}: cannot read {out}: {exc.strerror}") from None
    except ValueError as exc:  # results.Malformed, or not UTF-8
        raise UsageError(f"{flag}: cannot read {out}: {exc}") from None
    theirs = doc.environment.run
    for axis in AXES:
        if getattr(theirs, axis.name) != getattr(run, axis.name):
            raise UsageError(f"{flag}: {out} has {axis.name} {getattr(theirs, axis.name)}, this run "
                             f"{getattr(run, axis.name)}; run without {flag}")
    if doc.environment.spec_hash != spec_hash:
        raise UsageError(f"{flag}: {out} has spec hash {doc.environment.spec_hash}, this run {spec_hash}; "
                         f"run without {flag}")
    return doc


def _run(args, out: Path, workers, new_worker, spec, selected, variants, run: Run, disarm) -> int:
    """The run proper, holding the lock on `out`; disarm() makes stop signals no-ops from then on."""
    order = {inst.id: n for n, inst in enumerate(spec)}
    now = lambda: datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    doc = results.Results(environment=results.environment(run, args.spec, now(), workers[0].accelerator,
                                                          workers[0].packages, args.nodes),  # 1 unless data-parallel
                          profile=[results.VariantRecord.of(v) for v in variants])
    todo = selected
    doc.asked = None if len(selected) == len(spec) else [inst.id for inst in selected]
    if args.resume or args.only_errors:
        previous = _previous(out, args, run, doc.environment.spec_hash)
        # every record outside the selection is kept: a selection narrows what runs, never the file
        wanted = {inst.id for inst in selected}
        doc.cases = [c for c in previous.cases if c.id in order
                     and not (args.only_errors and c.verdict == "error" and c.id in wanted)]
        done = {c.id for c in doc.cases}
        todo = [inst for inst in selected if inst.id not in done]
        if previous.asked is None or doc.asked is None:
            doc.asked = None
        else:
            doc.asked = [i for i in order if i in set(previous.asked) | wanted]
    try:
        results.write(doc, out)  # fail now, not after the run, if the path is unwritable
    except OSError as exc:
        raise UsageError(f"cannot write results to {out}: {exc.strerror}") from None
    target = len(doc.cases) + len(todo)  # what the file holds once this run is done
    say(f"{run.describe()}: {len(todo)} instances to run"
        + (f", {len(doc.cases)} kept from {out}" if doc.cases else ""))
    start, width = time.perf_counter(), len(str(len(todo)))
    ran, saved_at, in_file = 0, time.monotonic(), len(doc.cases)

    def save(complete=False, final=False) -> bool:
        """Write `doc`; on failure say so and keep going: the file keeps its last good version."""
        nonlocal in_file
        doc.cases.sort(key=lambda c: order[c.id])
        doc.complete = complete
        if complete:
            doc.environment.finished = now()
        doc.summarize()
        try:
            results.write(doc, out)
        except OSError as exc:
            say(f"error: cannot save results to {out}: {exc.strerror or exc}; it keeps the last version "
                f"saved, without {len(doc.cases) - in_file} finished cases"
                + ("" if final else f" (trying again in {SAVE_EVERY:g} s)"), sys.stderr)
            return False
        in_file = len(doc.cases)
        return True

    def on_result(record):
        nonlocal ran
        doc.cases.append(record)
        ran += 1
        tag = record.verdict + (" (documented)" if record.documented else
                                " (explained)" if record.explained_by else "")
        line = f"[{ran:{width}}/{len(todo)}] {tag:24} {record.id}"
        say(line + (f"  -- {record.reason}" if record.verdict != "conform" else ""))
        save_if_due()

    def save_if_due():
        """Finished cases reach the file within SAVE_EVERY seconds, also while a slow case runs."""
        nonlocal saved_at
        if len(doc.cases) > in_file and time.monotonic() - saved_at > SAVE_EVERY:
            save()
            saved_at = time.monotonic()

    stopped = None
    try:
        try:
            run_isolated(workers[0], new_worker, todo, variants, args.timeout, on_result, save_if_due)
        finally:
            disarm()  # a signal from here on must not cut short the save; one before it is caught below
    except (Interrupted, WorkerFailed) as exc:
        stopped = exc
    except Exception:  # a suite bug: the finished cases are written first
        save(final=True)
        raise
    asked = order if doc.asked is None else doc.asked
    recorded = {c.id for c in doc.cases}
    saved = save(complete=stopped is None and all(i in recorded for i in asked), final=True)
    if isinstance(stopped, WorkerFailed):
        say(f"error: {stopped}", sys.stderr)
        return 4 if saved else NOT_SAVED
    if not saved:
        return NOT_SAVED
    if stopped:
        say(f"interrupted: {len(doc.cases)} of {target} cases written to {out} "
            f"(incomplete; stopped by {stopped})", sys.stderr)
        return stopped.status
    summary = doc.summary
    counts = ", ".join(f"{summary.get(v, 0)} {v}" for v in ("conform", "divergence", "error", "unsupported"))
    say(f"{run.framework} {run.execution}: {counts} ({summary['documented']} documented, "
        f"{summary['explained']} explained but undocumented divergences); "
        f"{time.perf_counter() - start:.1f} s; results in {out}")
    return 0
