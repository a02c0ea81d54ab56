"""`python -m conformance confirm --framework F`: what each finding's snippet prints on this install.

A finding is a variant of F's known.yaml that no upstream page states (`link: null`): the behaviour a
maintainer is asked to look at. Its snippet (confirm/<variant>.py) prints what the framework gives next
to what the reference gives, and asserts it. This command runs the snippet of each finding that
known.yaml says holds for the installed version, each in its own process with a time limit, and keeps
what it printed and how it exited: CONFIRM_DIR/<framework>-<version>.json. The site's page of findings
(`publish --confirm`) shows it. A snippet that fails or hangs is recorded as such and costs only itself.
"""
from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from .oracle.known import REPOSITORY, load_known
from .results import suite_sha, write
from .run import Run, scoped

CONFIRM_DIR = Path("reports/confirm")
MAX_OUTPUT = 6000          # characters of a snippet's output kept (its end: the verdict prints last)
SNIPPET_TIMEOUT_S = 300


class SnippetOutput(BaseModel):
    variant: str
    snippet: str                      # relative to the repository
    returncode: int | None            # None: it ran past the time limit and was killed
    output: str = Field(max_length=MAX_OUTPUT + 200)
    seconds: float


class ConfirmRun(BaseModel):
    framework: str
    version: str
    suite_sha: str
    finished: str
    snippets: list[SnippetOutput]


def run_snippet(path: Path, timeout: float = SNIPPET_TIMEOUT_S) -> tuple[int | None, str, float]:
    """Run one snippet as a user would (`python snippet.py`): its exit status (None if it timed out),
    the end of what it printed (stdout and stderr together), and its seconds."""
    start = time.monotonic()
    # its temporary files (MindSpore's compile dumps, TensorFlow's generated code) go with it, killed or not
    with tempfile.TemporaryDirectory(prefix="conformance-snippet-") as scratch:
        try:
            done = subprocess.run([sys.executable, str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout, cwd=REPOSITORY,
                                  env={**os.environ, "PYTHONWARNINGS": "ignore", "TMPDIR": scratch})
            code, raw = done.returncode, done.stdout
        except subprocess.TimeoutExpired as exc:
            code, raw = None, (exc.stdout or b"") + f"\n[killed after {timeout:.0f} s]".encode()
    text = raw.decode("utf-8", errors="replace")
    if len(text) > MAX_OUTPUT:
        text = "[...]\n" + text[-MAX_OUTPUT:]
    return code, text, round(time.monotonic() - start, 2)


def confirm(framework: str, version: str, out_dir: Path = CONFIRM_DIR, say=print) -> Path:
    """Run the findings' snippets of `framework` at `version` (the installed one) into out_dir."""
    findings = [v for v in load_known(framework)
                if v.link is None and scoped({"versions": v.versions}, Run(framework, version))]
    outputs = []
    for number, variant in enumerate(findings, 1):
        code, text, seconds = run_snippet(REPOSITORY / variant.snippet)
        status = "timed out" if code is None else ("confirmed" if code == 0 else f"exit {code}")
        say(f"confirm {framework} {version} [{number}/{len(findings)}] {variant.variant}: {status} ({seconds:.0f} s)")
        outputs.append(SnippetOutput(variant=variant.variant, snippet=variant.snippet, returncode=code,
                                     output=text, seconds=seconds))
    record = ConfirmRun(framework=framework, version=version, suite_sha=suite_sha(), snippets=outputs,
                        finished=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    path = Path(out_dir) / (re.sub(r"[^A-Za-z0-9.+_-]", "_", f"{framework}-{version}") + ".json")
    write(record, path)
    return path


def failed(path: Path) -> list[str]:
    """The findings whose snippet did not confirm them, in a file confirm() wrote."""
    record = ConfirmRun.model_validate_json(Path(path).read_text(encoding="utf-8"))
    return [s.variant for s in record.snippets if s.returncode != 0]
