"""The prepared accelerator run: one command on a GPU machine (docs/devices.md, "On a GPU machine without network").

    tools/device-run [--device cuda] [--framework NAME ...] [--budget SECONDS] [-k SUBSTRING] [--out DIR]

Every run each framework room offers on --device, and the same runs on the cpu beside them (the
"between devices" comparison wants both from one installed version), each in its own process, as
many at once as half the cores; the rooms' confirm snippets in the same call, so that a framework
version the profile has not seen is judged by its own evidence (a snippet outside its variant's
range is a strict xfail: a failure there means the variant holds beyond its range); then each run
against its room's contract (tests/contract: every outcome conform, documented or expected). Everything goes
into one folder named for the machine and the day: the results files, the snippets' JUnit reports,
nvidia-smi's output, each job's log and this run's log, packed as <out>/results.tar.gz beside
<out>/device-run.log (a device machine sends back a few files, not a tree). Unpack it into
reports/machines/ and the report shows its runs as columns.

A framework this Python lacks is said in one line and skipped (a room is named as its framework's
import). When the budget runs out, each job still running is stopped with SIGTERM: a run then saves
its finished cases, marked incomplete. Exit status: 0 when every job passed, 1 when one failed or
was stopped, 3 when --device cuda finds no GPU.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from conformance import results  # noqa: E402
from conformance.runners import ROOMS, offers  # noqa: E402

GRACE_S = 20  # after SIGTERM, for a run to save its finished cases
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # --name: one folder's name, never a path
STOPPED: list[int] = []  # the signals that asked this run to stop (SIGTERM, SIGINT, SIGHUP from outside)


def _stop(signum, frame):
    STOPPED.append(signum)


@dataclass
class Job:
    name: str
    argv: list[str]
    cwd: Path
    log: Path
    process: subprocess.Popen | None = None
    started: float = 0.0
    code: int | None = None
    stopped: bool = False  # by the budget or a signal
    seconds: float = 0.0

    @property
    def outcome(self) -> str:
        if self.stopped:
            why = f"by {signal.Signals(STOPPED[0]).name}" if STOPPED else "at the budget"
            return f"stopped {why} after {self.seconds:.0f} s"
        return f"{'ok' if self.code == 0 else f'failed (exit {self.code})'} in {self.seconds:.0f} s"


class Log:
    """Lines to stdout and to the log file, each stamped with the seconds since the start."""
    def __init__(self, path: Path):
        self.path, self.t0 = path, time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(path, "w", encoding="utf-8", errors="backslashreplace")

    def __call__(self, line: str) -> None:
        text = f"[{time.monotonic() - self.t0:6.1f} s] {line}"
        print(text, flush=True)
        self.fh.write(text + "\n")
        self.fh.flush()


def installed(framework: str) -> bool:
    return importlib.util.find_spec(framework) is not None


def gpu_name(log: Log, stage: Path) -> str | None:
    """nvidia-smi's whole output into the stage, and the first GPU's name; None without a GPU."""
    try:
        full = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=60)
        name = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        log(f"nvidia-smi: {exc}")
        return None
    (stage / "nvidia-smi.txt").write_text(full.stdout + full.stderr)
    if full.returncode != 0 or not name.stdout.strip():
        log(f"nvidia-smi: exit {full.returncode}: {(full.stderr or full.stdout).strip()[:300]}")
        return None
    for line in name.stdout.strip().splitlines():
        log(f"GPU: {line.strip()}")
    return name.stdout.splitlines()[0].split(",")[0].strip()


def plan(frameworks, devices, k, python, stage: Path, work: Path) -> list[Job]:
    """The run jobs, longest first (graph runs compile each case), then the confirm snippets."""
    runs, confirms = [], []
    logs = stage / "logs"
    for framework in frameworks:
        for device in devices:
            if device not in offers(framework).devices:
                continue
            for run in offers(framework).every_run(framework, device):
                if run.replicas != "1":  # one GPU here: a data-parallel run needs a device per replica
                    continue
                argv = [python, "-m", "conformance", "run", "--framework", framework, "--device", device,
                        "--mode", run.mode, "--api", run.api, *(["--backend", run.backend] if run.backend else []),
                        *(["-k", k] if k else [])]
                name = f"{framework}-{device}-{run.mode}{'+' + run.backend if run.backend else ''}-{run.api}"
                runs.append(Job(name, argv, work, logs / f"{name}.log"))
        if (REPO / "conformance" / "runners" / framework / "confirm").is_dir():
            confirms.append(Job(f"{framework}-confirm", [
                python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"conformance/runners/{framework}/confirm",
                f"--junitxml={stage / f'confirm-{framework}.xml'}"], REPO, logs / f"{framework}-confirm.log"))
    runs.sort(key=lambda job: "-graph" not in job.name)
    return runs + confirms


def run_jobs(jobs: list[Job], parallel: int, deadline: float, log: Log, env: dict) -> None:
    """Each job in its own process group, `parallel` at a time, until each ends or the deadline passes or
    a signal asks the run to stop (STOPPED): then the jobs running get SIGTERM, and SIGKILL GRACE_S later."""
    waiting, running, stopping = list(jobs), [], None
    while waiting or running:
        if stopping is None and (time.monotonic() >= deadline or STOPPED):
            stopping = time.monotonic()
        while waiting and len(running) < parallel and stopping is None:
            job = waiting.pop(0)
            job.log.parent.mkdir(parents=True, exist_ok=True)
            with open(job.log, "wb") as out:
                job.process = subprocess.Popen(job.argv, cwd=job.cwd, stdout=out, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, env=env,
                                               start_new_session=True)
            job.started = time.monotonic()
            running.append(job)
            log(f"start {job.name}")
        if stopping is not None:
            for job in waiting:
                job.stopped = True
                log(f"not started {job.name}: " + (f"stopped by {signal.Signals(STOPPED[0]).name}" if STOPPED
                                                   else "the budget ran out"))
            waiting.clear()
            for job in running:
                if not job.stopped:
                    job.stopped = True
                    os.killpg(job.process.pid, signal.SIGTERM)
            if running and time.monotonic() >= stopping + GRACE_S:
                for job in running:
                    os.killpg(job.process.pid, signal.SIGKILL)
        for job in list(running):
            if job.process.poll() is not None:
                job.code, job.seconds = job.process.returncode, time.monotonic() - job.started
                running.remove(job)
                last = [line for line in job.log.read_text(errors="replace").splitlines() if line.strip()][-1:]
                log(f"end {job.name}: {job.outcome}" + (f": {last[0][:300]}" if last else ""))
        time.sleep(0.2)


def pack(stage: Path, out: Path) -> Path:
    tarball = out / "results.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(stage, arcname=stage.name)
    return tarball


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tools/device-run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="the accelerator (default cuda); cpu rehearses")
    parser.add_argument("--framework", action="append", choices=[*ROOMS, "reference"],
                        help="only this room; repeatable (default: every room whose framework is installed)")
    parser.add_argument("--budget", type=float, default=480, help="seconds for all the jobs (default 480)")
    parser.add_argument("-k", help="only instance ids containing this (a quick rehearsal)")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "reports/device-out"),
                        help="where results.tar.gz and device-run.log go (default $OUT, else reports/device-out)")
    parser.add_argument("--name", help="the folder's name (default: the GPU's name and the date)")
    args = parser.parse_args(argv)
    if not 1 <= args.budget <= 3600:
        parser.error("--budget: between 1 and 3600 seconds")
    if args.name is not None and (not NAME.fullmatch(args.name) or args.name.strip(".") == ""):
        parser.error(f"--name {args.name!r}: a folder's name (letters, digits, '.', '_', '-'; at most 64), not a path")
    STOPPED.clear()
    handlers = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        return _main(args)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def _main(args) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="device-run-"))
    try:
        return _run_in(scratch, args, Log(args.out / "device-run.log"))
    finally:  # whichever way it ends: what it packed is in args.out
        shutil.rmtree(scratch, ignore_errors=True)


def _run_in(scratch: Path, args, log) -> int:
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    stage = scratch / "stage"
    stage.mkdir()
    log(f"python {platform.python_version()} at {sys.executable}; suite {results.suite_sha()}; "
        f"{os.cpu_count()} cores; out {args.out}")
    gpu = None
    if args.device == "cuda":
        gpu = gpu_name(log, stage)
        if gpu is None:
            log("no GPU: nvidia-smi sees none; nothing run")
            return 3
    name = args.name or f"{re.sub(r'[^a-z0-9]+', '-', (gpu or args.device + '-' + platform.node()).lower()).strip('-')}-{day}"
    stage = stage.rename(scratch / name)

    frameworks = args.framework or [f for f in ROOMS if installed(f)]
    for framework in ROOMS:
        if framework not in frameworks:
            log(f"{framework}: {'not asked for' if args.framework else 'not installed here'}: skipped")
    if not frameworks:
        log("no framework to run")
        return 1
    work = scratch / "work"  # `run` writes reports/results/ under its working directory
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
           "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "2"}
    jobs = plan(frameworks, dict.fromkeys((args.device, "cpu")), args.k, sys.executable, stage, work)
    parallel = max(1, (os.cpu_count() or 2) // 2)
    log(f"{len(jobs)} jobs, {parallel} at a time, budget {args.budget:.0f} s")
    run_jobs(jobs, parallel, time.monotonic() + args.budget, log, env)

    for path in sorted((work / "reports" / "results").glob("*.json")):
        try:
            doc = results.read(path)
        except (OSError, ValueError) as exc:
            log(f"{path.name}: unreadable: {exc}")
            continue
        shutil.move(path, stage / path.name)
        counts = ", ".join(f"{n} {what}" for what, n in sorted(doc.summary.items()))
        log(f"{path.name}: {'complete' if doc.complete else 'INCOMPLETE'}; {len(doc.cases)} cases: {counts}"
            + (f"; on {doc.environment.accelerator}" if doc.environment.accelerator else ""))
    if STOPPED:
        log(f"stopped by {signal.Signals(STOPPED[0]).name}: the contract checks are skipped; what finished is packed")
    for framework in [f for f in frameworks if f in ROOMS and not STOPPED]:  # each run against its room's contract
        for device in dict.fromkeys((args.device, "cpu")):
            if device not in offers(framework).devices:
                continue
            contract = Job(f"{framework}-{device}-contract", [
                sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/contract",
                "--framework", framework, "--device", device, "--replicas", "1", "--results", str(stage),
                f"--junitxml={stage / f'contract-{framework}-{device}.xml'}"], REPO, stage / "logs" / f"{framework}-{device}-contract.log")
            jobs.append(contract)
            run_jobs([contract], 1, time.monotonic() + 120, log, env)
    failed = [job for job in jobs if job.stopped or job.code != 0]
    log(f"{len(jobs) - len(failed)} of {len(jobs)} jobs passed" + (
        f"; not: {', '.join(job.name for job in failed)}" if failed else ""))
    shutil.copy(log.path, stage / "device-run.log")
    tarball = pack(stage, args.out)
    log(f"packed {tarball} ({tarball.stat().st_size >> 10} KiB): unpack into reports/machines/")
    return 128 + STOPPED[0] if STOPPED else 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
