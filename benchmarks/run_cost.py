"""What the jax room's main run costs: `python -m conformance run --framework jax --mode graph` (nnx.jit, the
whole spec), cold (an empty persistent compilation cache) and warm (again, on the cache the cold run filled),
next to its floor: the oracle's run of the same spec (`--framework reference`) plus jax's import. The aim is a
warm run within 3 times its floor. Each figure is the wall time of one command: its interpreter's start, its
imports and its worker process included, as a user's run pays them.
"""
import os
import subprocess
import sys
import tempfile
import time

from .frameworks import available, check


def _seconds(argv, env):
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        lines = done.stderr.strip().splitlines()
        raise RuntimeError(f"{' '.join(argv[1:])}: exit status {done.returncode}: {lines[-1] if lines else ''}")
    return time.perf_counter() - start


def run_costs():
    """{figure: seconds}; {} where jax is not installed (its benchmarks skip)."""
    if not available("jax"):
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": os.path.join(tmp, "cache")}

        def run(name, framework, *axes):
            return [sys.executable, "-m", "conformance", "run", "--framework", framework, *axes,
                    "--out", os.path.join(tmp, f"{name}.json")]
        return {"cold": _seconds(run("cold", "jax", "--mode", "graph"), env),
                "warm": _seconds(run("warm", "jax", "--mode", "graph"), env),
                "oracle": _seconds(run("oracle", "reference"), env),
                "import": _seconds([sys.executable, "-c", "import jax, optax; from flax import nnx"], env)}



class JaxRunCost:
    timeout = 1800.0

    def setup_cache(self):
        """the four figures, measured once for the class's benchmarks"""
        return run_costs()

    setup_cache.timeout = 1800.0

    def setup(self, measured):
        check("jax")  # a skip where jax is not here, a failure where CONFORMANCE_BENCH_REQUIRE names it

    def track_jit_cold_seconds(self, measured):
        """the jit run on an empty compilation cache"""
        return measured["cold"]

    def track_jit_warm_seconds(self, measured):
        """the jit run again, on the cache the cold run wrote"""
        return measured["warm"]

    def track_floor_seconds(self, measured):
        """the oracle's run of the same spec, plus `import jax, optax; from flax import nnx`"""
        return measured["oracle"] + measured["import"]

    def track_warm_over_floor(self, measured):
        """warm jit run / floor (the aim: at most 3)"""
        return measured["warm"] / (measured["oracle"] + measured["import"])

    track_jit_cold_seconds.unit = track_jit_warm_seconds.unit = track_floor_seconds.unit = "seconds"
    track_warm_over_floor.unit = "ratio"
