"""The results file: a versioned schema shared by every runner and the report, written atomically."""
from __future__ import annotations

import platform
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, Field, ValidationError

from .kernel.files import write_atomic
from .oracle.known import KnownVariant
from .run import Run
from .spec import spec_hash
from .spec.safe_yaml import read_text

SCHEMA_VERSION = 2
MAX_TEXT = 2000  # characters of any one string a results file keeps (a reason, a check, a name)


def _text(value: str) -> str:
    """Every string that goes into a results file came from an adapter, a worker process or a file
    name: made valid UTF-8 (a lone surrogate, e.g. from a file name that is not UTF-8, becomes its
    \\udcXX escape, so a save never fails on it) and cut to MAX_TEXT characters."""
    value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT - 1] + "…"


Text = Annotated[str, AfterValidator(_text)]


class VariantRecord(BaseModel):
    """A semantic variant of the framework's profile (runners/<framework>/known.yaml) as this run used it."""
    name: Text
    versions: Text = ""
    modes: list[Text] = []   # empty: every mode
    apis: list[Text] = []    # empty: every api
    backends: list[Text] = []  # empty: every backend
    reason: Text
    link: Text | None        # None: no upstream page states it
    snippet: Text            # the standalone script that confirms it
    devices: list[Text] = []  # empty: every device
    replicas: list[Text] = []  # empty: every replica count
    engines: list[Text] = []  # empty: every data-parallel engine

    @classmethod
    def of(cls, known: KnownVariant) -> "VariantRecord":
        return cls(name=known.variant, **known.scope(), reason=known.reason,
                   link=None if known.link is None else str(known.link), snippet=known.snippet)


class Explanation(BaseModel):
    """The variants the oracle needed to reproduce a divergence (each one's removal breaks the match)."""
    variants: list[VariantRecord]


class CheckRecord(BaseModel):
    check: Text
    expected: Text
    observed: Text
    held: bool


class CaseRecord(BaseModel):
    id: Text
    base_id: Text
    topic: Text
    title: Text
    references: list[Text]
    axes: dict[Text, Text]
    source: Text
    verdict: Literal["conform", "divergence", "error", "unsupported"]
    reason: Text | None = None  # one line: the failed check, the error or why unsupported
    # a divergence the oracle reproduces under the profile's variants, each with an upstream link
    documented: Explanation | None = None
    # reproduced too, but needing a variant no upstream page states (link: null)
    explained_by: Explanation | None = None
    # the first check the framework's profile does not reproduce; None when it reproduces them all
    # (on a conform case: the profile predicted a divergence that did not happen)
    unexplained: Text | None = None
    checks: list[CheckRecord] = []
    unobserved: list[Text] = []  # checks this run cannot observe (a trainer's gradients)
    duration_s: float

    @property
    def outcome(self) -> str:
        """conform | documented | explained (undocumented, but reproduced) | divergence (unexplained) |
        error | unsupported"""
        return "documented" if self.documented else "explained" if self.explained_by else self.verdict

    @property
    def variants(self) -> list[str]:
        """The variants the oracle needed to reproduce this case's divergence (none if it did not)."""
        explanation = self.documented or self.explained_by
        return [v.name for v in explanation.variants] if explanation else []


class Environment(BaseModel):
    framework: Text
    framework_version: Text
    device: Text
    mode: Text
    api: Text = "loop"  # the hand-written training loop; a framework's own trainer is another api
    backend: Text = ""  # what compiled the graph in graph mode (torch.compile's backend, ...)
    replicas: Text = "1"  # data-parallel replicas ("1": a single process)
    engine: Text = ""  # the data-parallel engine, where not the room's plain one (torch's fsdp1, fsdp2)
    nodes: int = Field(1, ge=1, le=64)  # the hosts a data-parallel run's ranks were spread over (run --nodes)
    accelerator: Text = ""  # the adapter's line on the device it computed on ("" on the cpu)
    packages: dict[Text, Text] = {}  # versions of the packages beside the framework (keras; flax, optax)
    python: Text
    numpy: Text
    platform: Text
    suite_sha: Text
    spec_hash: Text
    started: Text
    finished: Text | None = None

    @property
    def run(self) -> Run:
        return Run(self.framework, self.framework_version, self.device, self.mode, self.api, self.backend, self.replicas,
                   self.engine)


class Results(BaseModel):
    schema_version: Literal[2] = SCHEMA_VERSION
    complete: bool = False
    environment: Environment
    profile: list[VariantRecord] = []  # the framework's variants in force for this version
    summary: dict[str, int] = {}
    cases: list[CaseRecord] = []
    # the instance ids the run was asked for (-k, --case); None: the whole spec. `complete` means all
    # of them are recorded and the run was not interrupted.
    asked: list[Text] | None = None

    def summarize(self) -> dict[str, int]:
        self.summary = dict(Counter(c.verdict for c in self.cases))
        self.summary["documented"] = sum(c.documented is not None for c in self.cases)
        self.summary["explained"] = sum(c.explained_by is not None for c in self.cases)
        return self.summary


def suite_sha() -> str:
    """Git commit of the suite, '-dirty' when the checkout has changes; 'unknown' outside git."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=Path(__file__).parent, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    try:
        sha = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--", ".")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (sha + ("-dirty" if dirty else "")) if sha else "unknown"


RESULTS_DIR = Path("reports/results")
# results fetched from other machines (a GPU box's tools/device-run), a folder each, kept in git
MACHINES_DIR = Path("reports/machines")


def results_dirs() -> list[Path]:
    """What the report reads by default: this machine's runs, then each other machine's folder."""
    return [RESULTS_DIR, *sorted(p for p in MACHINES_DIR.glob("*") if p.is_dir())]


def environment(run: Run, spec_dir, started: str, accelerator: str = "", packages: dict | None = None,
                nodes: int = 1) -> Environment:
    return Environment(framework=run.framework, framework_version=run.version, device=run.device, mode=run.mode,
                       api=run.api, backend=run.backend, replicas=run.replicas, engine=run.engine, nodes=nodes, accelerator=accelerator,
                       packages=packages or {},
                       python=platform.python_version(), numpy=np.__version__,
                       platform=f"{platform.system()}-{platform.machine()} ({sys.platform})",
                       suite_sha=suite_sha(), spec_hash=spec_hash(spec_dir), started=started)


def write(results: BaseModel, path: Path) -> None:
    """Write a results file (or another record of the suite) whole or not at all, its folder made first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, results.model_dump_json(indent=1), sync=True)


class Malformed(ValueError):
    """A results file that does not parse or fit the schema; the message is one line."""


MAX_RESULTS_BYTES = 64 << 20  # a run of the spec writes a few MiB


def read(path: Path) -> Results:
    """The results file at `path`; Malformed (one line) when it is not one, FileNotFoundError when absent."""
    if not Path(path).exists() and not Path(path).is_symlink():
        raise FileNotFoundError(path)
    try:
        text = read_text(path, MAX_RESULTS_BYTES)
    except ValueError as exc:
        raise Malformed(str(exc)) from None
    try:
        doc = Results.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise Malformed(f"{where}: {first['msg']}{more}" if where else first["msg"] + more) from None
    seen = {}
    for n, case in enumerate(doc.cases):
        if case.id in seen:
            raise Malformed(f"cases.{n}.id: {case.id!r} is also cases.{seen[case.id]}")
        seen[case.id] = n
    return doc
