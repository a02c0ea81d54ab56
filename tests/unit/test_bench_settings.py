"""The benchmark suite's CONFORMANCE_BENCH_* variables: a bad value is one line naming the variable
and the value, raised when a case is built, and never a traceback on import (asv would lose the
whole suite, `asv check` included). No framework is needed: none is imported here."""
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings, strategies as st

_environ = dict(os.environ)
from benchmarks import common  # noqa: E402 - it pins thread variables in os.environ as it loads
os.environ.clear()
os.environ.update(_environ)  # ... which must not reach the other tests' processes

ROOT = Path(__file__).resolve().parents[2]


def _import_with(**env):
    """benchmarks.masked_update imported in a fresh process with these variables set: its
    CONFIG_ERRORS, and what check_config() raises (or None)."""
    code = ("import benchmarks.masked_update\n"
            "from benchmarks import common\n"
            "print(repr(common.CONFIG_ERRORS))\n"
            "try:\n    common.check_config()\n    print(None)\n"
            "except common.ConfigError as exc:\n    print(repr(str(exc)))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60)
    assert done.returncode == 0, done.stderr
    errors, raised = done.stdout.splitlines()
    return eval(errors), eval(raised)  # noqa: S307 - our own repr of a list and a string


def test_a_bad_thread_count_is_one_line_naming_it_and_the_suite_still_imports():
    errors, raised = _import_with(CONFORMANCE_BENCH_THREADS="four")
    assert errors == ["CONFORMANCE_BENCH_THREADS='four': expected a whole number of threads from 1 to 1024"]
    assert raised == errors[0]


def test_every_bad_variable_is_named_in_the_one_line():
    errors, raised = _import_with(CONFORMANCE_BENCH_THREADS="0", CONFORMANCE_BENCH_DEVICE="tpu",
                                  CONFORMANCE_BENCH_SELECT="(", CONFORMANCE_BENCH_TF_FUNCTION="yes",
                                  CONFORMANCE_BENCH_REQUIRE="torch,jaxx", CONFORMANCE_BENCH_AUDIT_REPEATS="0",
                                  CONFORMANCE_BENCH_AUDIT_IMAGE="16")
    assert len(errors) == 7 and "\n" not in raised
    for name in ("THREADS", "DEVICE", "SELECT", "TF_FUNCTION", "REQUIRE", "AUDIT_REPEATS", "AUDIT_IMAGE"):
        assert f"CONFORMANCE_BENCH_{name}=" in raised


def test_good_values_are_taken():
    errors, raised = _import_with(CONFORMANCE_BENCH_THREADS=" 2 ", CONFORMANCE_BENCH_DEVICE="CUDA",
                                  CONFORMANCE_BENCH_RELATIVE_REPEATS="7", CONFORMANCE_BENCH_AUDIT_REPEATS="1", CONFORMANCE_BENCH_AUDIT_IMAGE="32")
    assert errors == [] and raised is None


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=30))
def test_a_thread_count_is_a_whole_number_in_range_or_one_error_line(text):
    before = list(common.CONFIG_ERRORS)
    os.environ["CONFORMANCE_BENCH_PROBE"] = text
    try:
        value = common.setting("CONFORMANCE_BENCH_PROBE", 1, common._whole(1, common.MAX_THREADS), "threads")
        new = common.CONFIG_ERRORS[len(before):]
    finally:
        del os.environ["CONFORMANCE_BENCH_PROBE"]
        common.CONFIG_ERRORS[:] = before
    assert isinstance(value, int) and 1 <= value <= common.MAX_THREADS
    if new:
        assert value == 1 and len(new) == 1 and new[0].startswith("CONFORMANCE_BENCH_PROBE=")
