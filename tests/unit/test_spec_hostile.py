"""Hostile spec files: each is refused with a one-line SpecError naming the file (and line), never a crash,
an endless read or an exhausted memory."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import conformance
from conformance.schema import KNOWN_DIR, SpecError, load_known, load_spec

from test_schema import GOOD, error_of, write_spec

CASE_LINE = ":3:"   # the line of `- id: tiny` in GOOD
MODEL = "    model:\n"


def with_case_keys(text):
    """GOOD with extra case-level YAML inserted before `model:`."""
    return GOOD.replace(MODEL, text + MODEL, 1)


# ---------------------------------------------------------------- files that are not small regular files
def load_in_subprocess(spec_dir):
    """load_spec in a child with a memory cap and a timeout, so a reader that loops or hoards fails the test
    instead of hanging or exhausting the suite."""
    code = ("import sys\nfrom conformance.schema import SpecError, load_spec\n"
            "try:\n    load_spec(sys.argv[1])\nexcept SpecError as exc:\n    print('SpecError:', exc)\n")

    def cap_memory():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = {**os.environ, "PYTHONPATH": str(Path(conformance.__file__).parents[1])}
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(spec_dir)], capture_output=True, text=True,
                              env=env, timeout=60, preexec_fn=cap_memory)
    except subprocess.TimeoutExpired:
        pytest.fail("loading the spec did not finish")
    return proc.stdout.strip() + proc.stderr.strip()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe.yaml")
    out = load_in_subprocess(tmp_path)
    assert out == f"SpecError: {tmp_path / 'pipe.yaml'}: not a regular file"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_device_is_refused(tmp_path):
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    out = load_in_subprocess(tmp_path)
    assert out == f"SpecError: {tmp_path / 'zero.yaml'}: not a regular file"


def test_oversized_file_is_refused(tmp_path):
    padding = ("# " + "x" * 98 + "\n") * 11000  # 1.1 MB of comments: valid YAML, too large
    msg = error_of(tmp_path, GOOD + padding)
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}: ") and "larger than 1024 KiB" in msg
