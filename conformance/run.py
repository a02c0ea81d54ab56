"""A run, and the table of run axes.

A run is one framework version on one device, executed in one mode through one api (and, in graph
mode, compiled by one backend). Each axis is declared once, in AXES: its values, its default, whether
it is a command-line option, whether it names the results file, and the key by which `known.yaml` and
`expected.yaml` entries scope themselves to it. The CLI, results file names, profiles, expected
outcomes and the report all read this table. A new axis is one entry here, one field of Run, and the
rooms that offer runs along it.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import NamedTuple


class Axis(NamedTuple):
    name: str
    values: tuple[str, ...] | None  # the closed vocabulary; None: the adapter's own words
    default: str
    help: str
    option: bool = True   # --<name> of `run` and `repro`
    scope: str = ""       # the known.yaml / expected.yaml key that scopes an entry by this axis
    plain: str = ""       # the value a run label leaves out ("cpu", "eager", "loop")


AXES = (
    Axis("framework", None, "", "the framework room (conformance/runners/<framework>)", option=False),
    Axis("version", None, "", "the installed framework's version, as its adapter reports it", option=False,
         scope="versions"),
    Axis("device", ("cpu", "cuda", "ascend"), "cpu", "where the framework computes", scope="devices", plain="cpu"),
    Axis("mode", ("eager", "graph"), "eager", "execution mode: eager, or compiled as the framework's users compile",
         scope="modes", plain="eager"),
    Axis("api", ("loop", "trainer"), "loop",
         "loop: the hand-written training loop; trainer: the framework's own trainer", scope="apis", plain="loop"),
    Axis("backend", None, "", "what compiles the graph in graph mode (the room's first one if absent)",
         scope="backends"),
    Axis("replicas", ("1", "2"), "1", "data-parallel replicas training one model together through the framework's "
         "distributed engine (1: a single process on one device)", scope="replicas", plain="1"),
    Axis("engine", None, "", "with replicas: the data-parallel engine that shards or combines them, where the room "
         "offers more than its plain one (absent: DDP, DataParallel, ... the room's plain engine, which known.yaml and "
         "expected.yaml scope as \"default\")", scope="engines"),
)
AXIS = {axis.name: axis for axis in AXES}


@dataclass(frozen=True)
class Run:
    """One run's axes; a field per entry of AXES."""
    framework: str
    version: str = ""
    device: str = "cpu"
    mode: str = "eager"
    api: str = "loop"
    backend: str = ""
    replicas: str = "1"
    engine: str = ""

    def replace(self, **axes) -> "Run":
        return dataclasses.replace(self, **axes)

    @property
    def name(self) -> str:
        """The run as one file-name-safe word, e.g. paddle-3.3.1-cpu-eager-loop or
        torch-2.13.0-cpu-graph+inductor-loop (versions and backends are the adapter's words)."""
        safe = lambda text: re.sub(r"[^A-Za-z0-9.+_]", "_", text) or "_"
        mode = f"{safe(self.mode)}+{safe(self.backend)}" if self.backend else safe(self.mode)
        api = safe(self.api) + ("" if self.replicas == "1" else f"+dp{safe(self.replicas)}")
        api += f"+{safe(self.engine)}" if self.engine else ""
        return "-".join((safe(self.framework), safe(self.version), safe(self.device), mode, api))

    @property
    def line(self) -> str:
        """The run without its version, e.g. torch-cpu-graph+inductor-loop: what stays when a framework
        release replaces another, so that history follows a case from one release to the next."""
        framework, _version, rest = self.name.split("-", 2)
        return f"{framework}-{rest}"

    @property
    def execution(self) -> str:
        """Mode (with its backend), api and replicas (with their engine): what tells apart the runs of one version
        on one device."""
        replicas = self._replicas
        return f"{self.mode}{f' ({self.backend})' if self.backend else ''} {self.api}{replicas}"

    @property
    def label(self) -> str:
        """What tells this run apart beside framework and version; empty for a cpu eager loop."""
        mode = f"{self.mode} ({self.backend})" if self.backend else self.mode
        shown = (("device", self.device), ("mode", mode), ("api", self.api))
        words = [value for axis, value in shown if value != AXIS[axis].plain]
        return " ".join(words + ([self._replicas[2:]] if self._replicas else []))

    @property
    def _replicas(self) -> str:
        """e.g. ", 2 replicas" or ", 2 replicas (fsdp2)"; empty for one process."""
        if self.replicas == "1":
            return ""
        return f", {self.replicas} replicas" + (f" ({self.engine})" if self.engine else "")

    def describe(self) -> str:
        """e.g. "paddle 2.6.2 (cpu, graph (to_static), loop)", "torch 2.13.0 (cpu, eager, loop, 2 replicas)"."""
        mode = f"{self.mode} ({self.backend})" if self.backend else self.mode
        return f"{self.framework} {self.version} ({self.device}, {mode}, {self.api}{self._replicas})"


def takes(run: Run, case) -> bool:
    """Whether the run executes the case: a single-process run its single-process cases, a run of n replicas the
    data-parallel cases of n (spec Case.replicas). The others are no part of its results."""
    return run.replicas == str(case.replicas)


def scoped(scope: dict, run: Run) -> bool:
    """Whether an entry scoped by {scope key: values} (known.yaml, expected.yaml) holds for `run`.
    "versions" is a PEP 440 specifier over the run's version (a version it cannot parse is outside
    every bound range); every other key lists values of its axis. An empty entry, or an axis without
    a value in this run (the backend of an eager run), bounds nothing; in a data-parallel run, "default" names the
    room's plain engine (engine absent)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version
    for axis in AXES:
        if not axis.scope or not scope.get(axis.scope):
            continue
        value = getattr(run, axis.name)
        if axis.name == "engine" and run.replicas != "1":
            value = value or "default"
        if axis.name == "version":
            try:
                if Version(value) not in SpecifierSet(scope["versions"], prereleases=True):
                    return False
            except ValueError:  # InvalidVersion, or an integer part too long to convert
                return False
        elif value and value not in scope[axis.scope]:
            return False
    return True
