"""Data-parallel runs on a framework's distributed engine: a rank group started once per run by the framework's
own launcher (torchrun, paddle's launch, msrun) and fed cases, as the single-process worker is.

The run's worker process coordinates the group. It listens on a localhost port of its own (an authenticated
multiprocessing connection), starts the launcher with that address in the environment, and every rank the launcher
starts (rank_entry.py) connects back, builds the room's runner (which joins the framework's process group) and
says it is ready. For each case the coordinator sends the case to every rank; each rank observes it on its own rows
of the global batch (scenario.observe) and the coordinator merges the replies into one observation
(scenario.merge_replicas). A rank that dies, hangs or never joins makes that case an `error` with a one-line reason
naming the rank; the group is then ended and started again for the next case.

Several hosts (`run --nodes N --node-address HOST`): the ranks are split evenly over N nodes, each node's ranks
started by the framework's launcher with its own multi-node flags (torchrun --nnodes/--node-rank/--master-addr,
paddle's launch --nnodes/--rank/--master, msrun --node_rank/--master_addr; TensorFlow, which has none, its workers
started with TF_CONFIG), meeting at HOST, this host as the others reach it, where the coordinator listens too. On a
loopback HOST every node's launcher starts here (the several-hosts path rehearsed on one machine); otherwise this
host starts node 0's and prints each other node's command, to be run there in the same checkout. The suite starts
nothing on another host itself.

Nothing outlives the group: the launcher runs in a session of its own that the coordinator ends, it dies with the
coordinator (PR_SET_PDEATHSIG), every rank dies with its launcher and leaves when its connection closes, and the
run's tag (kernel.processes.TAG) lets the run end whatever is left. What the ranks print goes to a temporary folder
in the run's own, whose last line names the cause of a failure.
"""
from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import Client, Listener, answer_challenge, deliver_challenge, wait
from pathlib import Path

from ..kernel.lines import one_line
from ..kernel.processes import die_with_parent, run_folder
from ..run import Run
from ..runners.base import RankGroup, free_port
from ..spec import Case
from .judge import observe_safely
from .scenario import merge_replicas

ADDRESS_ENV = "CONFORMANCE_RANKS_ADDRESS"  # host:port of the coordinator
KEY_ENV = "CONFORMANCE_RANKS_KEY"  # its connections' authentication key, hex
RUN_ENV = "CONFORMANCE_RANKS_RUN"  # {"run": the run's axes, "adapter": the adapter's path, "nodes": N}, JSON
ENTRY = Path(__file__).with_name("rank_entry.py")  # the script a launcher starts on every rank
JOIN_TIMEOUT = 180.0  # seconds for every rank to import its framework, join the group and say it is ready
REMOTE_JOIN_TIMEOUT = 600.0  # the same where a person starts the other hosts' launchers
ERROR_GRACE_S = 5.0  # after one rank's error, how long the others get to reply (they may wait in a collective)
POLL_S = 0.1
MAX_PENDING = 64  # connections proving the key at once; a rank proves it at once, a stranger may hold one
NO_REPLY = "no reply after another rank's error"


LOGS_PREFIX = "conformance-ranks-"  # of the temporary folder where a rank group's launcher runs and its ranks log


_TRACEBACK = re.compile(r"(?P<prefix>.*?)Traceback \(most recent call last\):\s*$")
_FATAL = re.compile(r"Fatal Python error: .*")


def rank_cause(text: str, script: str) -> str:
    """The line of a launcher's log that says why a rank failed: the exception ending a traceback raised in the
    rank's `script`, or a native crash's "Fatal Python error" (faulthandler), whichever came last. Failing that,
    the last line with a word in it before the last traceback raised elsewhere. What a launcher prints once a
    rank has failed (its own traceback and report: torchrun's ChildFailedError, msrun's "Distributed job exited
    with exception", rows of '=') says that a rank failed, not why. '' for a log that says nothing."""
    lines = text.splitlines()
    in_script = re.compile(rf'File "(?:.*/)?{re.escape(script)}"')
    cause, end, i = "", len(lines), 0
    while i < len(lines):
        fatal, start = _FATAL.search(lines[i]), _TRACEBACK.match(lines[i])
        if fatal:
            cause = fatal.group(0).strip()
        elif start:
            prefix, first = start["prefix"], i
            i += 1
            # its frames are indented under the prefix (a launcher may put "[rank1]: " before a rank's lines)
            while i < len(lines) and lines[i].startswith(prefix + " "):
                i += 1
            if first + 1 < len(lines) and in_script.search(lines[first + 1]):
                if i < len(lines):
                    cause = lines[i][len(prefix):].strip()
            else:  # raised elsewhere: the last such one is the launcher's own, as a rule, and its report follows
                end = first
        i += 1
    if cause:
        return cause
    worded = [line.strip() for line in lines[:end] if re.search(r"[A-Za-z0-9]", line)]
    return worded[-1] if worded else ""


@dataclass(frozen=True)
class Nodes:
    """The hosts of a data-parallel run: `count` nodes of replicas // count ranks each; `address` is this host as
    the others reach it (the coordinator and node 0's launcher listen there)."""
    count: int = 1
    address: str = "127.0.0.1"

    @property
    def here(self) -> bool:
        """Every node on this machine: the address is a loopback one."""
        try:
            return ipaddress.ip_address(socket.gethostbyname(self.address)).is_loopback
        except (OSError, ValueError):
            return False


class GroupFailed(Exception):
    """The rank group could not start, or lost a rank; the message is one line."""


class Ranks:
    """The ranks of one data-parallel run, started by the launcher its room declares (runners/base.py's RankGroup:
    `launch(world, script, ...)` is the launcher's argv, one per node) and replaced after a failure."""

    def __init__(self, declared: RankGroup, path: str, run: Run, nodes: Nodes = Nodes()):
        self.launch, self.path, self.run, self.nodes = declared.launch, path, run, nodes
        self.world = int(run.replicas)
        self.launchers: list[subprocess.Popen] = []  # this host's, one per node started here
        self.conns: list = []  # by rank
        self.ready: tuple = ()  # rank 0's (version, backend, accelerator, packages)
        self.seq = 0
        # in the run's temporary folder, which goes with the run (the worker that holds this is killed, not closed)
        self.logs = tempfile.TemporaryDirectory(prefix=LOGS_PREFIX, dir=run_folder())

    # ---------------------------------------------------------------- start and end
    def start(self) -> tuple:
        """Launch the ranks and wait until each has joined; rank 0's (version, backend, accelerator,
        packages), or GroupFailed."""
        key = secrets.token_bytes(32)
        # no authkey here: each connection proves the key in a thread of its own (admit), so a stranger on the
        # port, or one that connects and says nothing, delays no rank and ends nothing
        listener = Listener(("127.0.0.1" if self.nodes.here else self.nodes.address, 0))
        host, port = listener.address
        if not self.nodes.here:
            host = self.nodes.address
        # the ranks import this very package, and what the run's folder and PYTHONPATH hold (an --adapter's
        # module): absolute, as the launcher runs in a temporary folder
        given = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        path = os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.getcwd(), *map(os.path.abspath, given)])
        # and run on this interpreter, where a launcher (msrun) starts `python` from PATH
        bin_path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
        ours = {ADDRESS_ENV: f"{host}:{port}", KEY_ENV: key.hex(), "PYTHONPATH": path, "PATH": bin_path,
                RUN_ENV: json.dumps({"run": asdict(self.run), "adapter": self.path, "nodes": self.nodes.count})}
        self.log_files = []
        stamp = int(time.time() * 1000)
        count = self.nodes.count
        master = "" if count == 1 else f"{self.nodes.address}:{free_port(host)}"  # the launchers' rendezvous
        for node in range(count):
            argv = (self.launch(self.world, str(ENTRY)) if count == 1 else
                    self.launch(self.world, str(ENTRY), count, node, master))
            if node and not self.nodes.here:  # another host's: a person starts it there
                print(f"node {node} of {count}: on that host, in this checkout, within {REMOTE_JOIN_TIMEOUT:g} s, "
                      f"run: env {shlex.join(f'{k}={v}' for k, v in ours.items())} {shlex.join(argv)}",
                      file=sys.stderr, flush=True)
                continue
            folder = Path(self.logs.name) / f"node-{node}"  # a launcher writes its ranks' logs under its cwd
            folder.mkdir(exist_ok=True)
            self.log_files.append(folder / f"launch-{stamp}.log")
            with open(self.log_files[-1], "wb") as out:
                self.launchers.append(subprocess.Popen(
                    argv, env={**os.environ, **ours}, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True, preexec_fn=die_with_parent, cwd=folder))
        accepted: list = []

        def admit(conn):
            try:
                deliver_challenge(conn, key)
                answer_challenge(conn, key)
            except Exception:  # a caller without the key, or one that hung up
                conn.close()
                return
            finally:
                pending.release()
            with lock:
                accepted.append(conn)
                if len(accepted) >= self.world:
                    done.set()

        def accept():
            while not done.is_set():
                try:
                    conn = listener.accept()
                except Exception:  # the listener closed under it
                    return
                if not pending.acquire(blocking=False):  # a flood of strangers: refused, not served
                    conn.close()
                    continue
                threading.Thread(target=admit, args=(conn,), daemon=True).start()

        lock, done, pending = threading.Lock(), threading.Event(), threading.BoundedSemaphore(MAX_PENDING)

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        timeout = JOIN_TIMEOUT if self.nodes.here else REMOTE_JOIN_TIMEOUT
        deadline = time.monotonic() + timeout
        try:
            while not done.is_set() and time.monotonic() < deadline and not self.launcher_exited():
                done.wait(POLL_S)
            if len(accepted) < self.world:
                why = "the launcher exited" if self.launcher_exited() else f"not all joined within {timeout:g} s"
                self.kill()
                raise GroupFailed(f"{len(accepted)} of {self.world} ranks joined ({why}): {self.failure_line()}")
        finally:
            listener.close()
        with lock:
            joined = accepted[:self.world]
        readies = {}
        for conn in joined:
            if not conn.poll(max(0.0, deadline - time.monotonic())):
                self.kill()
                raise GroupFailed(f"a rank joined but never said it was ready: {self.failure_line()}")
            try:
                message = conn.recv()
            except (EOFError, OSError):
                self.kill()
                raise GroupFailed(f"a rank died while starting: {self.failure_line()}") from None
            if message[0] == "fatal":
                self.kill()
                raise GroupFailed(message[1])
            readies[message[1]] = (conn, message[2:])
        if sorted(readies) != list(range(self.world)):
            self.kill()
            raise GroupFailed(f"the ranks call themselves {sorted(readies)}, not 0 to {self.world - 1}")
        self.conns = [readies[r][0] for r in range(self.world)]
        self.ready = readies[0][1]
        return self.ready

    def launcher_exited(self) -> bool:
        return any(launcher.poll() is not None for launcher in self.launchers)

    def failure_line(self) -> str:
        """Why the group failed, in one line: the rank's own words (rank_cause) from the log written last that
        says anything."""
        for log in sorted(self.log_files, key=lambda f: f.stat().st_mtime if f.exists() else 0, reverse=True):
            try:
                cause = rank_cause(log.read_text(errors="replace"), ENTRY.name)
            except OSError:
                continue
            if cause:
                return cause[:300]
        return "no output"

    def kill(self) -> None:
        """End each launcher's session (the ranks with it) and drop the connections."""
        for launcher in self.launchers:
            try:
                os.killpg(launcher.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            launcher.kill()
            launcher.wait()
        self.launchers = []
        for conn in self.conns:
            conn.close()
        self.conns = []

    def close(self) -> None:
        self.kill()
        self.logs.cleanup()

    # ---------------------------------------------------------------- one case
    def observe(self, case: Case, limit: float) -> tuple[str, object]:
        """The case on every rank, merged: ('ok', Observation) | ('unsupported', why) | ('error', one line).
        A group lost on an earlier case is started again first."""
        if not self.launchers:
            try:
                self.start()
            except GroupFailed as exc:
                return "error", f"the rank group could not start again: {exc}"
        self.seq += 1
        for conn in self.conns:
            try:
                conn.send((self.seq, case))
            except OSError:
                pass  # it died between cases: gathering says how
        replies, failure = self._gather(0.9 * limit)  # the rest of the limit is the parent's to hear the reply
        if failure is not None or ("error", NO_REPLY) in replies:  # a rank left waiting in a collective
            self.kill()
        if failure is not None:
            return "error", failure
        errors = [r for r, (kind, payload) in enumerate(replies) if kind == "error" and payload != NO_REPLY]
        if errors:  # the rank that failed, not one left waiting for it
            return "error", f"rank {errors[0]}: {replies[errors[0]][1]}"
        kinds = [kind for kind, _ in replies]
        if "unsupported" in kinds:
            return "unsupported", replies[kinds.index("unsupported")][1]
        try:
            return "ok", merge_replicas(case, [obs for _, obs in replies])
        except ValueError as exc:
            return "error", f"bad observation: {one_line(exc)}"

    def _gather(self, within: float) -> tuple[list, str | None]:
        """Every rank's (kind, payload) for the case in flight, or why not (a rank died or hung)."""
        replies: dict[int, tuple] = {}
        deadline = time.monotonic() + within
        while len(replies) < self.world:
            waiting = [c for r, c in enumerate(self.conns) if r not in replies]
            errors = [r for r, (kind, _) in replies.items() if kind == "error"]
            left = deadline - time.monotonic()
            if errors:  # the others may wait in a collective the failed rank never joins
                left = min(left, ERROR_GRACE_S)
            if left <= 0:
                if errors:
                    return [replies.get(r, ("error", NO_REPLY)) for r in range(self.world)], None
                hung = [r for r in range(self.world) if r not in replies]
                if len(hung) == 1:
                    return [], f"rank {hung[0]} hung: no reply within {within:.3g} s ({self.failure_line()})"
                # which of them holds the others in a collective, no reply tells: each is named
                return [], (f"ranks {_listed(hung)} hung: no reply within {within:.3g} s (one may wait for another "
                            f"in a collective) ({self.failure_line()})")
            for conn in wait(waiting, min(left, POLL_S * 10)):
                rank = self.conns.index(conn)
                try:
                    seq, who, outcome = conn.recv()
                except (EOFError, OSError):
                    time.sleep(POLL_S)  # its launcher prints why it ended, and may end the other ranks
                    dead = [r for r, other in enumerate(self.conns) if r not in replies and _closed(other)]
                    if len(dead) > 1:  # ended together (a launcher ends the rest once one fails): which first, unknown
                        return [], f"ranks {_listed(dead)} ended: {self.failure_line()}"
                    return [], f"rank {rank} died: {self.failure_line()}"
                except Exception as exc:
                    return [], f"rank {rank}: bad reply: {one_line(exc)}"
                if (seq, who) != (self.seq, rank):
                    return [], f"rank {rank}: its reply does not answer this case (an extra or missing message)"
                replies[rank] = outcome
        return [replies[r] for r in range(self.world)], None


def _listed(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks[:-1])) + f" and {ranks[-1]}"


def _closed(conn) -> bool:
    """Whether a rank's connection has ended (its process died). A reply it holds is read and dropped: the case
    has failed already."""
    try:
        if conn.poll(0):
            conn.recv_bytes()
        return False
    except (EOFError, OSError):
        return True


def rank_main() -> None:
    """One rank, started by the launcher: connect back, build the room's runner, observe each case it is sent."""
    from ..runners import load_adapter
    import faulthandler
    faulthandler.enable()  # a native crash leaves its cause in the launcher's log (rank_cause reads it)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle
    die_with_parent()  # the launcher
    given = json.loads(os.environ[RUN_ENV])
    run = Run(**given["run"])
    adapter = load_adapter(given["adapter"], run.framework)  # what fails here, the launcher's log says
    if adapter.parallelism.launcher(given["nodes"]).not_a_rank():  # the launcher's own (msrun's scheduler) serves
        adapter(run)
        return
    host, port = os.environ[ADDRESS_ENV].rsplit(":", 1)
    conn = Client((host, int(port)), authkey=bytes.fromhex(os.environ[KEY_ENV]))
    try:
        runner = adapter(run)
        conn.send(("ready", runner.rank, adapter.version(), runner.backend, runner.accelerator(), runner.packages()))
    except Exception as exc:
        conn.send(("fatal", f"a rank failed to start: {one_line(exc)}"))
        return
    while True:
        try:
            seq, case = conn.recv()
        except (EOFError, OSError):  # the coordinator is gone
            return
        outcome = observe_safely(runner, case)
        try:
            conn.send((seq, runner.rank, outcome))
        except Exception as exc:  # pickling failed, so nothing was written yet
            conn.send((seq, runner.rank, ("error", f"bad observation: cannot send it: {one_line(exc)}")))
