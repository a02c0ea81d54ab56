"""The paddle room: runner.py holds the adapter and drives the loop, graph.py its graph mode (to_static
and the static program), trainer.py hapi's trainer; known.yaml is its semantic profile, confirm/ holds
the standalone snippets that confirm each variant."""
from .runner import PaddleRunner

__all__ = ["PaddleRunner"]
