"""`python -m conformance audit FILE.py:FUNC --framework F [--steps N] [--replicas N] [--json PATH] [--junit PATH]
[--sarif PATH] [--allow FILE]`.

The user's code runs in a child process (spawned, in a session of its own, ended with the parent),
so a step that hangs is stopped at --timeout and one that crashes the interpreter costs nothing but
its own step. The child sends what the probe observed, as JSON, after each step; the parent validates
it, derives the findings, and rewrites --json each time, so a crash loses no step already taken.

Exit status: 0 no finding outside --allow; 1 findings outside --allow; 2 bad input (the target, FUNC
or what it returns, a model of another framework, the --allow file, the options, a --json that is a device,
FIFO or link or could not be written, and so for --junit and --sarif); 3 the user's step
raised, hung, crashed, or changed nothing (the findings of the steps before are still shown and saved).
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import multiprocessing
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..kernel.files import write_atomic
from ..kernel.lines import one_line, printable, say
from ..kernel.processes import Unread, contain, die_with, die_with_parent, end_run, tag_run
from ..spec.safe_yaml import SpecError, load_yaml, validate
from . import AuditReport, DEFAULT_STEPS, formats, report
from .findings import Finding, explain, replica_findings, step_problem
from .kinds import KINDS
from .observe import AuditInputError, Inventory, StepObservation, observe_step

SCHEMA = 1                 # of the --json document
MAX_MESSAGE = 256 << 20    # bytes of one message from the child
DEFAULT_TIMEOUT = 600.0    # seconds for loading FUNC, and for each step
FINDINGS, BAD_INPUT, STEP_FAILED = 1, 2, 3
TARGET = re.compile(r"(?P<file>.+\.py):(?P<func>[A-Za-z_][A-Za-z0-9_]*)")


class Allow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str
    subject: str = Field(min_length=1, max_length=400)  # a glob over parameter names and layer paths
    reason: str = Field(min_length=1, max_length=2000)

    def covers(self, finding: Finding) -> bool:
        return finding.kind == self.kind and fnmatch.fnmatchcase(finding.subject, self.subject)


class AllowFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow: list[Allow] = Field(default_factory=list, max_length=10_000)


def load_allow(path: Path) -> list[Allow]:
    raw = load_yaml(path)
    entries = validate(AllowFile, raw if raw is not None else {}, path).allow
    for n, entry in enumerate(entries):
        if entry.kind not in KINDS:
            raise SpecError(f"{path}: allow[{n}]: unknown kind {entry.kind!r}; known: {', '.join(KINDS)}")
    return entries


# ------------------------------------------------------------------ the child: the user's code
def _send(conn, *message) -> None:
    conn.send_bytes(json.dumps(message).encode())


def _load_target(file: str, func: str) -> dict:
    """FUNC() of FILE, checked: a dict holding model, optimizer and a callable step."""
    import importlib.util
    path = Path(file).resolve()
    sys.path.insert(0, str(path.parent))  # as `python FILE` would: the user's file imports its neighbours
    spec = importlib.util.spec_from_file_location(f"_audited_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    # BaseException: a SystemExit or KeyboardInterrupt the user's code raises is its bad input too
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        raise AuditInputError(f"{file} failed to import: {one_line(exc)}") from None
    target = getattr(module, func, None)
    if not callable(target):
        raise AuditInputError(f"{file} defines no function {func}")
    try:
        built = target()
    except BaseException as exc:
        raise AuditInputError(f"{func}() raised {one_line(exc)}") from None
    if not isinstance(built, dict):
        raise AuditInputError(f"{func}() returned a {type(built).__name__}, not a dict with model, optimizer and step")
    missing = [key for key in ("model", "optimizer", "step") if key not in built]
    if missing:
        raise AuditInputError(f"{func}() returned a dict without {', '.join(missing)}")
    if not callable(built["step"]):
        raise AuditInputError(f"{func}()['step'] is a {type(built['step']).__name__}, not a callable")
    return built


def _digest(value) -> str:
    return hashlib.sha256(value.tobytes()).hexdigest()[:32]


def _child(conn, file: str, func: str, framework: str, steps: int, parent: int, rank_env: dict | None = None,
           in_process: int = 0) -> None:
    os.setsid()
    die_with(parent)
    os.environ.update(rank_env or {})  # a rank of --replicas: its launcher's variables, before the user's code runs
    sys.stdout, sys.stderr = Unread(sys.stdout), Unread(sys.stderr)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's
    import faulthandler
    faulthandler.enable()
    from . import probe_class
    if in_process:  # the room's replicas in this process, made before the user's code runs
        from ..runners import room
        try:
            room(framework).AUDIT_IN_PROCESS(in_process)
        except Exception as exc:
            _send(conn, "bad-input", f"--replicas {in_process}: {framework} could not make its replicas in the "
                                     f"audited process: {one_line(exc)}")
            return
    try:
        built = _load_target(file, func)
        probe = probe_class(framework)(built["model"], built["optimizer"])
        inventory = probe.inventory()
    except AuditInputError as exc:
        _send(conn, "bad-input", str(exc))
        return
    except Exception as exc:
        _send(conn, "bad-input", f"the {framework} probe could not read the model: {one_line(exc)}")
        return
    _send(conn, "inventory", inventory.model_dump())
    probe.install()
    for index in range(steps):
        _send(conn, "starting", index)
        try:
            obs = observe_step(probe, built["step"], index, inventory)
        except AuditInputError as exc:  # the step ran; the probe cannot read what it did
            _send(conn, "step-failed", f"step {index + 1} of {steps}: {exc}")
            return
        except BaseException as exc:  # a framework's message opens with its cause (DDP's goes on for lines)
            _send(conn, "step-failed", f"step {index + 1} of {steps} raised {one_line(exc, line=0)}")
            return
        _send(conn, "step", obs.model_dump())
        if rank_env is not None:  # what the replicas hold after the step, compared across them by the parent
            _send(conn, "values", index, {name: _digest(value) for name, value in probe.values()})
        if in_process:  # each replica's own copies, compared by the parent as the ranks' values are
            per_replica = [{} for _ in range(in_process)]
            for name, parts in probe.replica_values(in_process):
                for copies, part in zip(per_replica, parts):
                    copies[name] = _digest(part)
            _send(conn, "replica-values", index, per_replica)
    probe.uninstall()
    _send(conn, "done")


# ------------------------------------------------------------------ the parent
class _Stop(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _receive(conn, process, timeout: float, what: str, stop: threading.Event | None = None) -> list:
    deadline = time.monotonic() + timeout
    while not conn.poll(min(0.5, max(0.0, deadline - time.monotonic()))):
        if stop is not None and stop.is_set():
            raise _Stop(STEP_FAILED, f"stopped during {what}: another rank failed")
        if time.monotonic() >= deadline:
            break
    if not conn.poll(0):
        if process.is_alive():
            raise _Stop(STEP_FAILED, f"{what} did not finish within {timeout:g} s (--timeout)")
    try:
        raw = conn.recv_bytes(MAX_MESSAGE)
    except (EOFError, OSError):
        process.join(1.0)
        code = process.exitcode
        how = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit status {code}"
        raise _Stop(STEP_FAILED, f"the audited process ended ({how}) during {what}") from None
    try:
        message = json.loads(raw)
        if not (isinstance(message, list) and message and isinstance(message[0], str)):
            raise ValueError("not a tagged message")
        return message
    except ValueError as exc:
        raise _Stop(STEP_FAILED, f"unreadable message from the audited process during {what}: {exc}") from None


def run_child(target: str, framework: str, steps: int, timeout: float, on_step=None, rank_env: dict | None = None,
              values: list | None = None, stop: threading.Event | None = None, in_process: int = 0,
              ) -> tuple[Optional[Inventory], list[StepObservation], Optional[tuple[int, str]]]:
    """(inventory, observed steps, (status, error line) or None) of the target run in a child. A rank of
    --replicas: `rank_env` its launcher's variables, `values` gets each step's {name: digest}, `stop` set ends it.
    `in_process` replicas of a room that keeps them in one process: `values` gets each step's [{name: digest}], one
    per replica."""
    match = TARGET.fullmatch(target)
    if not match:
        return None, [], (BAD_INPUT, f"target {target!r} is not FILE.py:FUNC")
    file, func = match["file"], match["func"]
    if not Path(file).is_file():
        return None, [], (BAD_INPUT, f"{file}: no such file")
    ctx = multiprocessing.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    tag = None if rank_env is not None else tag_run()  # the ranks of --replicas: run_replicas tags them once
    process = ctx.Process(target=_child, args=(sender, file, func, framework, steps, os.getpid(), rank_env,
                                               in_process), daemon=True)
    inventory, observed = None, []
    try:
        process.start()
        sender.close()
        what = f"loading {target}"
        while True:
            message = _receive(receiver, process, timeout, what, stop)
            kind, rest = message[0], message[1:]
            if kind == "bad-input":
                return inventory, observed, (BAD_INPUT, str(rest[0])[:2000] if rest else "bad input")
            if kind == "step-failed":
                return inventory, observed, (STEP_FAILED, str(rest[0])[:2000] if rest else "step failed")
            if kind == "inventory":
                inventory = Inventory.model_validate(rest[0])
            elif kind == "starting":
                what = f"step {int(rest[0]) + 1} of {steps}"
            elif kind == "step":
                if inventory is None:
                    raise _Stop(STEP_FAILED, "the audited process sent a step before describing the model")
                observed.append(StepObservation.model_validate(rest[0]))
                if on_step is not None:
                    on_step(inventory, observed)
            elif kind == "values" and values is not None:
                if int(rest[0]) != len(values) or not isinstance(rest[1], dict) or len(rest[1]) > 100_000 or not all(
                        isinstance(k, str) and isinstance(v, str) for k, v in rest[1].items()):
                    raise _Stop(STEP_FAILED, "the audited process sent values out of turn, or not names and digests")
                values.append(rest[1])
            elif kind == "replica-values" and values is not None and in_process:
                if int(rest[0]) != len(values) or not isinstance(rest[1], list) or len(rest[1]) != in_process or not all(
                        isinstance(d, dict) and len(d) <= 100_000 and all(
                            isinstance(k, str) and isinstance(v, str) for k, v in d.items()) for d in rest[1]):
                    raise _Stop(STEP_FAILED, "the audited process sent replica values out of turn, or not one "
                                             "{name: digest} per replica")
                values.append(rest[1])
            elif kind == "done":
                if inventory is None or len(observed) != steps:  # what a forged or confused child may say
                    raise _Stop(STEP_FAILED, f"the audited process said done after {len(observed)} of {steps} "
                                             f"step(s)" + ("" if inventory else ", before describing the model"))
                return inventory, observed, None
            else:
                raise _Stop(STEP_FAILED, f"unknown message {kind[:40]!r} from the audited process")
    except _Stop as stop:
        return inventory, observed, (stop.status, str(stop))
    except (ValidationError, TypeError, IndexError, ValueError) as exc:
        return inventory, observed, (STEP_FAILED, f"bad message from the audited process: {one_line(exc)}")
    finally:
        if process.is_alive():
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                process.kill()
        process.join(5)
        if tag is not None:
            end_run(tag)


def run_replicas(target: str, framework: str, steps: int, timeout: float, replicas: int, rank_env,
                 on_step=None, scheduler=None) -> tuple[list[tuple], Optional[str]]:
    """Each of `replicas` ranks runs the target as run_child runs it, with the variables the room's launcher would
    give it (rank_env(rank, world, port)), all at once; the first rank that fails stops the others. Per rank:
    (inventory, observed steps, (status, error line) or None, each step's {name: digest}); and why the room's
    `scheduler` (world, port) -> (python code, variables), the process the ranks meet at, ended before them, if it did."""
    from ..runners.base import free_port
    port, stop, out = free_port(), threading.Event(), [None] * replicas
    tag = tag_run()
    meeting, meeting_failed = None, []
    if scheduler is not None:
        meeting, watch = _start_scheduler(scheduler, replicas, port, stop, meeting_failed)

    def rank(r: int) -> None:
        values: list = []
        try:
            result = run_child(target, framework, steps, timeout, on_step if r == 0 else None,
                               rank_env(r, replicas, port), values, stop)
        except Exception as exc:  # a thread's own failure must still end the others
            result = (None, [], (STEP_FAILED, one_line(exc)))
        if result[2] is not None:
            stop.set()
        out[r] = (*result, values)
    threads = [threading.Thread(target=rank, args=(r,), name=f"rank {r}") for r in range(replicas)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        stop.set()
        if meeting is not None:
            _end(meeting)
            watch.join(5)
        end_run(tag)
    return out, (meeting_failed or [None])[0]


def _start_scheduler(scheduler, world: int, port: int, stop: threading.Event, failed: list):
    """The process the ranks meet at that is no rank of its own (msrun's scheduler), started as its launcher starts
    it; a thread watches it: ending before the ranks are done, it stops them, and `failed` gets why in one line."""
    code, variables = scheduler(world, port)
    log = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **variables}, stdin=subprocess.DEVNULL,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent)

    def watch():
        status = process.wait()
        if status != 0 and not stop.is_set():  # 0: the ranks left it, ending on their own
            log.seek(0)
            lines = [line for line in log.read()[-20_000:].decode(errors="replace").splitlines() if line.strip()]
            how = f"signal {signal.Signals(-status).name}" if status < 0 else f"exit status {status}"
            failed.append(f"the scheduler the ranks meet at ended ({how}) before them"
                          + (f": {printable(lines[-1].strip())[:300]}" if lines else ""))
            stop.set()
        log.close()
    thread = threading.Thread(target=watch, name="scheduler", daemon=True)
    thread.start()
    return process, thread


def _end(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    process.wait(5)


def first_rank_failure(ranks: list[tuple]) -> Optional[tuple[int, str]]:
    """The failure of the first rank that failed on its own (not stopped because another had), named by its rank."""
    failed = [(r, f) for r, (_, _, f, _) in enumerate(ranks) if f is not None]
    own = [(r, f) for r, f in failed if "another rank failed" not in f[1]] or failed
    return (own[0][1][0], f"rank {own[0][0]}: {own[0][1][1]}") if own else None


def replica_extra(result: AuditReport, ranks: list[tuple]) -> list[Finding]:
    """What rank 0's own findings miss: replicas-disagree (values that differ between the ranks after a step),
    and each other rank's findings that rank 0 does not have."""
    extra = replica_findings(result.inventory, [values for *_, values in ranks])
    seen = {(f.kind, f.subject) for f in result.findings}
    for r, (inventory, observed, _, _) in enumerate(ranks[1:], 1):
        if inventory is None:
            continue
        for finding in report(inventory, observed).findings:
            if (finding.kind, finding.subject) not in seen:
                seen.add((finding.kind, finding.subject))
                extra.append(finding.model_copy(update={"detail": f"rank {r} only: {finding.detail}"}))
    return extra


def document(target: str, framework: str, steps: int, result: Optional[AuditReport], allow: list[Allow],
             error: Optional[str]) -> dict:
    """The --json document (schema SCHEMA)."""
    findings = result.findings if result else []
    because = {id(f): next((a.reason for a in allow if a.covers(f)), None) for f in findings}
    stale = [a.model_dump() for a in allow if not any(a.covers(f) for f in findings)]
    inventory = result.inventory if result else None
    return {
        "schema": SCHEMA, "target": target, "framework": framework,
        "version": inventory.version if inventory else None,
        "model_type": inventory.model_type if inventory else None,
        "steps_requested": steps, "steps_done": len(result.steps) if result else 0,
        "findings": [{**f.model_dump(), "allowed": because[id(f)] is not None, "allowed_because": because[id(f)]}
                     for f in findings],
        "notes": result.notes if result else [],
        "stale_allow": stale if error is None else [],
        "error": error,
    }


def _not_a_file(path: Path) -> str | None:
    """Why `path` must not be written, or None: it is a regular file or absent. write_atomic renames a file
    over it, which would replace a device (as root, /dev/null), a FIFO or a link with a file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None if path.parent.is_dir() else "not a file in an existing folder"
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISDIR(mode):
        return "not a file in an existing folder"
    return None if stat.S_ISREG(mode) else "a device, FIFO or link, not a regular file: not replaced"


# the output options: each writes the document in its format
FORMATS = {"json": lambda doc: json.dumps(doc, indent=1, allow_nan=False), "junit": formats.junit,
           "sarif": formats.sarif}


class Out:
    """--json, --junit, --sarif: the findings in that format, rewritten after each step. A write that fails
    (the file turned into a device, FIFO or link, the folder removed, the disk full) is said once, in one
    line; the audit goes on, and its exit status is then 2 unless the step failed."""

    def __init__(self, path: Path | None, option: str = "json"):
        self.path, self.option, self.failed = path, option, None

    def write(self, doc: dict) -> None:
        if self.path is None or self.failed:
            return
        why = _not_a_file(self.path)
        if why is None:
            try:
                write_atomic(self.path, FORMATS[self.option](doc))
                return
            except OSError as exc:
                why = exc.strerror or str(exc)
        self.failed = f"--{self.option} {self.path}: {why}"
        print(printable(f"error: {self.failed}"), file=sys.stderr)


def table(doc: dict) -> str:
    """The findings for people: grouped by kind, most severe first, one line each."""
    lines = [f"audit of {doc['target']} ({doc['framework']} {doc['version'] or '?'}, "
             f"{doc['model_type'] or '?'}): {doc['steps_done']} of {doc['steps_requested']} steps"]
    by_kind: dict[str, list[dict]] = {}
    for finding in doc["findings"]:
        by_kind.setdefault(finding["kind"], []).append(finding)
    for kind, found in by_kind.items():
        lines.append("")
        lines.append(f"{kind} ({len(found)}): {KINDS[kind].title}")
        first = found[0]
        if first["variant"]:
            lines.append(f"  explained by {first['variant']}: {first['link'] or 'no upstream page'}")
        else:
            lines.append(f"  no variant of {doc['framework']}'s profile explains it: the model's code gives it "
                         "under the reference semantics too, or the profile does not know its mechanism yet")
        if first["porting"]:  # the clause before the colon: the variant and where it holds, or "not ..."
            lines.append("  elsewhere: " + "; ".join(f"{fw}: {note.split(':', 1)[0]}"
                                                     for fw, note in first["porting"].items()))
        for f in found:
            steps = f" steps {','.join(str(s + 1) for s in f['steps'])}" if f["steps"] else ""
            numbers = " ".join(f"{k}={int(v) if float(v).is_integer() else format(v, '.3g')}"
                               for k, v in f["numbers"].items())
            mark = " [allowed]" if f["allowed"] else ""
            lines.append(printable(f"  {f['subject']} ({f['layer_type']}){steps}: {f['detail']}"
                                    f"{'; ' + numbers if numbers else ''}{mark}"))
    if not doc["findings"]:
        lines.append("no findings")
    for note in doc["notes"]:
        lines.append(printable(f"note: {note}"))
    for entry in doc["stale_allow"]:
        lines.append(printable(f"stale allow entry (matches nothing): {entry['kind']} {entry['subject']}"))
    if doc["error"]:
        lines.append(printable(f"error: {doc['error']}"))
    return "\n".join(lines)


def cmd_audit(args) -> int:
    from ..runners import ROOMS
    if args.framework not in ROOMS:
        print(f"error: unknown framework {args.framework!r}; choose from {', '.join(ROOMS)}", file=sys.stderr)
        return BAD_INPUT
    if not 1 <= args.steps <= 10_000:
        print(f"error: --steps {args.steps}: expected 1 to 10000", file=sys.stderr)
        return BAD_INPUT
    if not 0 < args.timeout <= 86_400:
        print(f"error: --timeout {args.timeout:g}: expected more than 0 and at most 86400 s", file=sys.stderr)
        return BAD_INPUT
    try:
        allow = load_allow(Path(args.allow)) if args.allow else []
    except SpecError as exc:
        print(printable(f"error: {exc}"), file=sys.stderr)
        return BAD_INPUT
    replicas, rank_env, scheduler, in_process = getattr(args, "replicas", 1), None, None, 0
    if not 1 <= replicas <= 64:
        print(f"error: --replicas {replicas}: expected 1 to 64", file=sys.stderr)
        return BAD_INPUT
    if replicas > 1:
        from ..runners import room
        declared = room(args.framework)
        rank_env, scheduler = getattr(declared, "AUDIT_RANK_ENV", None), getattr(declared, "AUDIT_SCHEDULER", None)
        in_process = replicas if getattr(declared, "AUDIT_IN_PROCESS", None) else 0
        if rank_env is None and not in_process:
            starting = [f for f in ROOMS if getattr(room(f), "AUDIT_RANK_ENV", None) or
                        getattr(room(f), "AUDIT_IN_PROCESS", None)]
            print(f"error: --replicas {replicas}: the {args.framework} room starts no audited replicas yet "
                  f"({', '.join(starting)} do)", file=sys.stderr)
            return BAD_INPUT
    outs = [Out(Path(getattr(args, option)), option) for option in FORMATS if getattr(args, option, None)]
    for out in outs:
        if why := _not_a_file(out.path):
            print(printable(f"error: --{out.option} {out.path}: {why}"), file=sys.stderr)
            return BAD_INPUT
    started = time.monotonic()

    def write(doc):
        for out in outs:
            out.write(doc)

    def progress(inventory, observed):
        obs = observed[-1]
        print(f"step {obs.step + 1}/{args.steps}: {obs.seconds:.2f} s, {obs.updates} update(s)", file=sys.stderr)
        write(document(args.target, args.framework, args.steps, report(inventory, observed), allow,
                       "incomplete: the audit is running"))

    print(printable(f"auditing {args.target} on {args.framework}, {args.steps} step(s)"
                    + (f", {replicas} replicas" if replicas > 1 else "")), file=sys.stderr)
    contain()  # what the audited step starts ends with the audit, even after a SIGKILL, where a cgroup can be made
    if rank_env is None:
        values: list = []
        inventory, observed, failure = run_child(args.target, args.framework, args.steps, args.timeout, progress,
                                                 values=values, in_process=in_process)
        # replicas in one process: each is a "rank" that observed what the process did, holding its own copies
        ranks = [(inventory, observed, failure, [step[r] for step in values]) for r in range(in_process)]
    else:
        ranks, scheduler_failed = run_replicas(args.target, args.framework, args.steps, args.timeout, replicas,
                                               rank_env, progress, scheduler)
        inventory, observed = ranks[0][0], ranks[0][1]
        failure = (STEP_FAILED, scheduler_failed) if scheduler_failed else first_rank_failure(ranks)
    if failure is None:
        problem = step_problem(observed)
        failure = (STEP_FAILED, problem) if problem else None
    result = report(inventory, observed) if inventory is not None else None
    if result is not None and ranks:
        result.findings += replica_extra(result, ranks)
        explain(result.findings, args.framework, inventory.version, replicas=str(replicas))
    doc = document(args.target, args.framework, args.steps, result, allow, failure[1] if failure else None)
    write(doc)
    if inventory is None:  # nothing was read of the model: the one line is all there is to say
        print(printable(f"error: {failure[1]}"), file=sys.stderr)
        return failure[0]
    say(table(doc))  # `audit ... | head`: a reader that went away ends nothing
    print(f"({time.monotonic() - started:.1f} s)", file=sys.stderr)
    if failure is not None:
        return failure[0]
    if any(out.failed for out in outs):
        return BAD_INPUT
    return FINDINGS if any(not f["allowed"] for f in doc["findings"]) else 0


def add_parser(sub) -> None:
    p = sub.add_parser("audit", help="audit a user's own model, optimizer and training step")
    p.add_argument("target", help="FILE.py:FUNC; FUNC() returns {'model': ..., 'optimizer': ..., 'step': callable}")
    p.add_argument("--framework", required=True, help="the framework the model is written in")
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS, help=f"training steps to run (default {DEFAULT_STEPS})")
    p.add_argument("--json", help="write the findings here as JSON (rewritten after each step)")
    p.add_argument("--junit", help="and as JUnit XML: a test per kind of finding, failed by those outside --allow")
    p.add_argument("--sarif", help="and as SARIF 2.1.0 (GitHub code scanning): a result per finding, at FUNC's "
                                   "line; those --allow covers suppressed")
    p.add_argument("--allow", help="YAML: allow: [{kind, subject (a glob), reason}]; findings it covers do not fail")
    p.add_argument("--replicas", type=int, default=1,
                   help="run FUNC in this many ranks at once, with the variables the framework's launcher gives each "
                        "(torch: torchrun's; paddle: paddle.distributed.launch's; mindspore: msrun's, its scheduler too; tensorflow: N logical CPU devices in one process for a MirroredStrategy), and report what the replicas disagree on "
                        "(default 1)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds for loading FUNC and for each step (default {DEFAULT_TIMEOUT:g})")
    p.set_defaults(func=cmd_audit)
