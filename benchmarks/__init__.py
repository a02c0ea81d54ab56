"""asv benchmark suite of the conformance project: masked vs unmasked update paths (see
masked_update.py). Run with `asv run` from the repository root; docs/benchmarks.md has the commands."""
