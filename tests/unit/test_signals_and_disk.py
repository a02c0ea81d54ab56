"""A hostile signal, reader or disk never loses finished results or crashes the run.

Runs use the test-only spec in faults/spec: its healthy cases on the reference adapter, or every
case on the fault-injecting adapter.
"""
import os
import subprocess
import sys
from pathlib import Path

from conformance import results
from conformance.__main__ import main

FAULTS = Path(__file__).parent / "faults"
SPEC = FAULTS / "spec"
HEALTHY = [f"healthy-{n}" for n in range(9)]


def run(capsys, *argv, spec=SPEC):
    try:
        code = main(["--spec", str(spec), *argv])
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def cases(*ids):
    return [arg for case_id in ids for arg in ("--case", case_id)]


# ---------------------------------------------------------------- output
def test_closed_stdout_does_not_stop_the_run(tmp_path):
    """`run ... | head -0`: the reader is gone before the first line."""
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "conformance", "--spec", str(SPEC), "run", "--framework",
                             "reference", "--out", str(out), *cases(*HEALTHY[:3])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert "Error" not in err
    doc = results.read(out)
    assert doc.complete and [c.id for c in doc.cases] == HEALTHY[:3]
