"""The tensorflow room: runner.py drives the loop, graph.py its tf.function step (--mode graph),
trainer.py Keras' compile + fit (--api trainer); known.yaml is its semantic profile, confirm/ holds
the standalone snippets that confirm each variant."""
from .runner import TensorFlowRunner

__all__ = ["TensorFlowRunner"]
