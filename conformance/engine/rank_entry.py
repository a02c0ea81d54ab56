"""The script a data-parallel launcher (torchrun, paddle's launch, msrun) starts on every rank: see ranks.py."""
import sys
from pathlib import Path

# a script's folder comes first on sys.path: this package's modules must not shadow top-level ones
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from conformance.engine.ranks import rank_main  # noqa: E402

rank_main()
