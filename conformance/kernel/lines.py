"""One-line messages: an exception as its record or the terminal shows it, and lines from outside
(adapters' messages, reasons, ids, file names) printed safely."""
from __future__ import annotations

import os
import sys
import traceback


def one_line(exc: BaseException, line: int = -1) -> str:
    """`Type: the message's last line (or its `line`) (at file:line)`, where it was raised."""
    text = [t for t in str(exc).strip().splitlines() if t.strip()]
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" (at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {text[line].strip() if text else ''}{at}"


def printable(line: str) -> str:
    """A line as the terminal shows it safely: control characters (escape sequences, carriage
    returns, a line break inside a reason or a name) and what cannot be encoded appear escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in line).encode(
        "utf-8", "backslashreplace").decode("utf-8")


def say(text: str, stream=None) -> None:
    """Print; a reader that went away (`run ... | head`) must not stop the run. Each line of `text`
    is shown printable: adapter messages, reasons, ids and titles come from outside."""
    stream = stream or sys.stdout
    try:
        print("\n".join(printable(line) for line in str(text).split("\n")), file=stream, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # later lines and the exit's flush go nowhere
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
