"""asv benchmark suite of the conformance project: masked vs unmasked update paths (see
masked_update.py). Run with `asv run` from the repository root; README.md has the commands."""
