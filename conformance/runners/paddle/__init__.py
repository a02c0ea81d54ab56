"""The paddle room: runner.py drives the loop, known.yaml is its semantic profile, confirm/ holds the
standalone snippets that confirm each variant."""
from .runner import PaddleRunner

__all__ = ["PaddleRunner"]
