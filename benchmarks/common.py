"""Shared pieces of the benchmark suite: sizes, thread pinning, device choice, fixed-seed data.

Importing this module pins the intra-op thread count through the environment variables the
frameworks read when they load, so it must be imported before any framework (the benchmark
modules import it first and import their framework only inside `setup`).
"""
import os
import statistics
import time

import numpy as np

# ------------------------------------------------------------------ threads
# One thread by default, so a figure is the cost of the work, not of how well it spreads over
# the cores of the machine it ran on. CONFORMANCE_BENCH_THREADS=N asks for N instead.
THREADS = int(os.environ.get("CONFORMANCE_BENCH_THREADS", "1"))
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
              "NUMEXPR_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
    os.environ[_name] = str(THREADS)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's C++ INFO/WARNING lines
# MindSpore PyNative: launch ops blocking (1, the default here) or through its default
# asynchronous pipeline of queue threads (0), which cannot be held to one core.
MINDSPORE_BLOCKING = os.environ.get("CONFORMANCE_BENCH_MINDSPORE_BLOCKING", "1") != "0"
# TensorFlow: the training step inside tf.function (1, the default here) or eager (0).
TF_FUNCTION = os.environ.get("CONFORMANCE_BENCH_TF_FUNCTION", "1") != "0"

# ------------------------------------------------------------------ device
DEVICES = ("cpu", "cuda")


def device():
    """The device named by CONFORMANCE_BENCH_DEVICE (cpu unless set)."""
    name = os.environ.get("CONFORMANCE_BENCH_DEVICE", "cpu").lower()
    if name not in DEVICES:
        raise NotImplementedError(f"CONFORMANCE_BENCH_DEVICE={name!r}: expected one of {DEVICES}")
    return name


# ------------------------------------------------------------------ model and step sizes
N_LAYERS = 64   # a stack of equal Linear/Dense layers (WIDTH -> WIDTH, tanh after each)
WIDTH = 256
BATCH = 32      # small next to WIDTH, so the update is a real share of the step
LR = {"sgd_wd": 1e-3, "adamw": 1e-4}
WEIGHT_DECAY = 1e-2
WARMUP_STEPS = 3     # steps taken when a case is built: lazy optimizer state, first-call caches
RELATIVE_REPEATS = 25  # steps of each model timed by track_step_cost_relative


def masked_layers(fraction):
    """How many leading layers a mask covers: round(fraction * N_LAYERS)."""
    return int(round(fraction * N_LAYERS))


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


def interleaved_medians(first, second, repeats):
    """Median times of first() and second(), calls alternated so drift on a shared machine
    hits both alike."""
    a, b = [], []
    for _ in range(repeats):
        for step, times in ((first, a), (second, b)):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
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
