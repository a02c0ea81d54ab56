"""The mindspore room: runner.py is the adapter (model, optimizer, the hand-written loop, observations),
graph.py what only GRAPH_MODE needs, trainer.py what only TrainOneStepCell needs; known.yaml is its
semantic profile, confirm/ holds the standalone snippets that confirm each variant."""
from .runner import MindSporeRunner

__all__ = ["MindSporeRunner"]
