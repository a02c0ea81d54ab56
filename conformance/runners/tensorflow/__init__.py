"""The tensorflow room. runner.py: the adapter (the hand-written GradientTape loop); graph.py: its
tf.function step (--mode graph); trainer.py: Keras' compile + fit (--api trainer); audit.py: the
probe of `audit`; known.yaml: its semantic profile; expected.yaml: its outcomes that are neither
conform nor documented; confirm/: one standalone snippet per variant; tests/: the adapter held to
hand-written Keras code."""
from ..base import Offers

ADAPTER = "conformance.runners.tensorflow.runner:TensorFlowRunner"
AUDIT = "conformance.runners.tensorflow.audit:KerasProbe"  # python -m conformance audit
# tf.function compiles the loop's step, and fit's train function, in graph mode
OFFERS = Offers(devices=("cpu", "cuda", "ascend"),  # ascend: refused with the reason, by the adapter
                runs=({}, {"mode": "graph", "backend": "tf.function"}, {"api": "trainer"},
                      {"mode": "graph", "backend": "tf.function", "api": "trainer"}))
