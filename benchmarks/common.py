"""Shared pieces of the benchmark suite: sizes, thread pinning, device choice, fixed-seed data.

Importing this module pins the intra-op thread count through the environment variables the
frameworks read when they load, so it must be imported before any framework (the benchmark
modules import it first and import their framework only inside `setup`).
"""
import os
import re
import statistics
import time

import numpy as np

# ------------------------------------------------------------------ settings
# Every CONFORMANCE_BENCH_* variable is read here, once, when the suite is imported. A bad value
# does not stop the import (asv would lose the whole suite, `asv check` included): it is kept in
# CONFIG_ERRORS, and building a case raises ConfigError with one line naming the variable and the
# value, so each benchmark fails there instead of deep inside a framework. An empty value is unset.
MAX_THREADS = 1024
FLAGS = {"0": False, "1": True}
CONFIG_ERRORS = []


class ConfigError(ValueError):
    """A CONFORMANCE_BENCH_* variable holds a value the suite cannot use."""


def setting(name, default, parse, expected):
    """os.environ[name] through parse(text), or default when unset or empty. A value parse rejects
    (ValueError, KeyError, re.error) is noted in CONFIG_ERRORS, and default is returned in its place."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return parse(text)
    except re.error as exc:  # a regular expression: say where it is broken
        CONFIG_ERRORS.append(f"{name}={os.environ[name]!r}: expected {expected} ({exc})")
    except (ValueError, KeyError):
        CONFIG_ERRORS.append(f"{name}={os.environ[name]!r}: expected {expected}")
    return default


def _whole(low, high):
    """A parser of whole numbers from low to high."""
    def parse(text):
        n = int(text)
        if not low <= n <= high:
            raise ValueError(text)
        return n
    return parse


def _flag(text):
    return FLAGS[text]


def check_config():
    """Raise ConfigError, one line, when any CONFORMANCE_BENCH_* variable was bad."""
    if CONFIG_ERRORS:
        raise ConfigError("; ".join(CONFIG_ERRORS))


# ------------------------------------------------------------------ threads
# One thread by default, so a figure is the cost of the work, not of how well it spreads over
# the cores of the machine it ran on. CONFORMANCE_BENCH_THREADS=N asks for N instead.
THREADS = setting("CONFORMANCE_BENCH_THREADS", 1, _whole(1, MAX_THREADS),
                  f"a whole number of threads from 1 to {MAX_THREADS}")
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
              "NUMEXPR_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
    os.environ[_name] = str(THREADS)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's C++ INFO/WARNING lines
# MindSpore PyNative: launch ops blocking (1, the default here) or through its default
# asynchronous pipeline of queue threads (0), which cannot be held to one core.
MINDSPORE_BLOCKING = setting("CONFORMANCE_BENCH_MINDSPORE_BLOCKING", True, _flag, "0 or 1")
# TensorFlow: the training step inside tf.function (1, the default here) or eager (0).
TF_FUNCTION = setting("CONFORMANCE_BENCH_TF_FUNCTION", True, _flag, "0 or 1")
# asv's fork server imports the installed framework once (1, the default) or not (0).
PREIMPORT = setting("CONFORMANCE_BENCH_PREIMPORT", True, _flag, "0 or 1")

# ------------------------------------------------------------------ device
DEVICES = ("cpu", "cuda")
DEVICE = setting("CONFORMANCE_BENCH_DEVICE", "cpu", lambda text: {d: d for d in DEVICES}[text.lower()],
                 " or ".join(DEVICES))


def device():
    """The device named by CONFORMANCE_BENCH_DEVICE (cpu unless set)."""
    return DEVICE


# ------------------------------------------------------------------ what is timed
MASKS = ("frozen", "unused", "zero_grad", "stop_gradient")  # see frameworks/__init__.py
FRACTIONS = (0.0, 0.5, 0.9, 0.99)                           # share of the layers masked
OPTIMIZERS = ("sgd_wd", "adamw")

# ------------------------------------------------------------------ model and step sizes
N_LAYERS = 64   # a stack of equal Linear/Dense layers (WIDTH -> WIDTH, tanh after each)
WIDTH = 256
BATCH = 32      # small next to WIDTH, so the update is a real share of the step
LR = {"sgd_wd": 1e-3, "adamw": 1e-4}
WEIGHT_DECAY = 1e-2
WARMUP_STEPS = 3     # steps taken when a case is built: lazy optimizer state, first-call caches
# track_step_cost_relative alternates a step of the masked model with one of the unmasked model:
# at least RELATIVE_REPEATS[0] pairs, then more until both medians are known to RELATIVE_SPREAD
# (their standard error, estimated from the spread of the steps so far), RELATIVE_REPEATS[2]
# seconds have passed, or RELATIVE_REPEATS[1] pairs were taken. CONFORMANCE_BENCH_RELATIVE_REPEATS=N
# takes exactly N pairs instead (25 was the fixed count before the adaptive one).
RELATIVE_REPEATS = (5, 25, 1.0)
RELATIVE_SPREAD = 0.01
_fixed = setting("CONFORMANCE_BENCH_RELATIVE_REPEATS", None, _whole(1, 1000),
                 "a whole number of steps from 1 to 1000")
if _fixed is not None:
    RELATIVE_REPEATS = (_fixed, _fixed, float("inf"))
# The combinations track_step_cost_relative measures (all of them in one process, so asv's own
# --bench cannot narrow that down): those whose asv name CONFORMANCE_BENCH_SELECT, a regular
# expression, is found in, as `asv run --bench` finds it; pass both the same expression.
SELECT = setting("CONFORMANCE_BENCH_SELECT", None, re.compile, "a regular expression")
RELATIVE_NAME = "masked_update.MaskedUpdate.track_step_cost_relative"


def selected(framework, mask, fraction, optimizer):
    """Whether CONFORMANCE_BENCH_SELECT (unset: everything) selects this combination of
    track_step_cost_relative; its name as asv writes it, e.g.
    masked_update.MaskedUpdate.track_step_cost_relative('torch', 'frozen', 0.9, 'sgd_wd')."""
    name = f"{RELATIVE_NAME}({', '.join(map(repr, (framework, mask, fraction, optimizer)))})"
    return SELECT is None or SELECT.search(name) is not None

def masked_layers(fraction):
    """How many leading layers a mask covers: round(fraction * N_LAYERS)."""
    return int(round(fraction * N_LAYERS))


# ------------------------------------------------------------------ the audit's cost (audit_cost.py)
AUDIT_STEPS = 3     # the audit's default
AUDIT_BATCH = 8     # images of AUDIT_IMAGE x AUDIT_IMAGE through a ResNet-18
# audited runs (and as many plain runs), alternated; the medians are compared. The benchmark check in
# the tests env asks for 1 (CONFORMANCE_BENCH_AUDIT_REPEATS) and 32-pixel images (CONFORMANCE_BENCH_AUDIT_IMAGE,
# a quarter of the work: MindSpore's PyNative step takes about 4 s at 64): it shows the benchmark runs, not what
# it measures.
AUDIT_IMAGE = setting("CONFORMANCE_BENCH_AUDIT_IMAGE", 64, _whole(32, 1024), "a whole number of pixels from 32 to 1024")
AUDIT_REPEATS = setting("CONFORMANCE_BENCH_AUDIT_REPEATS", 3, _whole(1, 100), "a whole number of repeats from 1 to 100")


# ------------------------------------------------------------------ fixed-seed data
# !!! Append only: never change an existing builder, its seed or its sizes -- results taken at
# different commits must have measured the same arrays. Add a new builder instead.
def layer_weights(n_layers=N_LAYERS, width=WIDTH):
    """[(kernel (in, out), bias (out,))] * n_layers, float32; kernel ~ N(0, 1/width) keeps the
    tanh activations of a 64-deep stack away from both saturation and denormals."""
    rng = np.random.default_rng(20240611)
    scale = np.float32(1.0 / np.sqrt(width))
    return [(rng.standard_normal((width, width), dtype=np.float32) * scale,
             rng.standard_normal(width, dtype=np.float32) * np.float32(0.01))
            for _ in range(n_layers)]


def batch(batch_size=BATCH, width=WIDTH):
    """(inputs, targets) of shape (batch_size, width), float32."""
    rng = np.random.default_rng(20240612)
    x = rng.standard_normal((batch_size, width), dtype=np.float32)
    t = np.tanh(rng.standard_normal((batch_size, width), dtype=np.float32))
    return x, t


# ------------------------------------------------------------------ measuring
def median_seconds(step, repeats):
    """Median wall time of `repeats` calls of step() (each call synchronises the device itself)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def median_error(times):
    """The standard error of the median of `times` relative to it, estimated from their median
    absolute deviation (as for a normal sample: 1.2533 * 1.4826 * MAD / sqrt(n))."""
    med = statistics.median(times)
    mad = statistics.median(abs(t - med) for t in times)
    return 1.2533 * 1.4826 * mad / (med * len(times) ** 0.5) if med > 0 else float("inf")


def interleaved_medians(first, second, repeats, spread=RELATIVE_SPREAD):
    """Median times of first() and second(), calls alternated so drift on a shared machine
    hits both alike. repeats: a number of pairs, or (least, most, seconds): at least `least`
    pairs, then until both medians are known to `spread` (median_error), `seconds` have passed
    or `most` pairs were taken."""
    least, most, seconds = (repeats, repeats, float("inf")) if isinstance(repeats, int) else repeats
    a, b = [], []
    end = time.perf_counter() + seconds
    while len(a) < most:
        for step, times in ((first, a), (second, b)):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        if len(a) >= least and (time.perf_counter() > end
                                or max(median_error(a), median_error(b)) <= spread):
            break
    return statistics.median(a), statistics.median(b)


def busy_threads(step, seconds=0.5, share=0.1):
    """Threads of this process that did work while step() ran repeatedly for about `seconds`:
    those whose CPU time grew by more than `share` of the busiest thread's. Linux /proc only;
    None elsewhere."""
    def cpu_times():
        out = {}
        try:
            tids = os.listdir("/proc/self/task")
        except OSError:
            return None
        for tid in tids:
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                out[tid] = int(fields[11]) + int(fields[12])  # utime + stime, clock ticks
            except (OSError, IndexError, ValueError):
                pass
        return out

    before = cpu_times()
    if before is None:
        return None
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        step()
    after = cpu_times()
    used = [after[t] - before.get(t, 0) for t in after]
    top = max(used, default=0)
    return sum(1 for u in used if top and u > share * top)
