"""The tensorflow room. runner.py: the adapter (the hand-written GradientTape loop); graph.py: its
tf.function step (--mode graph); trainer.py: Keras' compile + fit (--api trainer); audit.py: the
probe of `audit`; known.yaml: its semantic profile; expected.yaml: its outcomes that are neither
conform nor documented; confirm/: one standalone snippet per variant; tests/: the adapter held to
hand-written Keras code."""
from ..base import Offers

ADAPTER = "conformance.runners.tensorflow.runner:TensorFlowRunner"
AUDIT = "conformance.runners.tensorflow.audit:KerasProbe"  # python -m conformance audit
# how its probe reads gradients before the update (docs/audit.md)
AUDIT_READS = ("the optimizer instance's `apply` (Keras 3) or `apply_gradients` (Keras 2) is wrapped: eagerly it reads each gradient; in a traced step (`fit`, `train_on_batch`, a `tf.function`) it counts in variables of its own which variables got a gradient, without reading values (reading them let grappler rewrite the step); a step traced before the audit is refused in one line")


def AUDIT_IN_PROCESS(world: int) -> None:
    """`audit --replicas N`: TensorFlow has no launcher; a MirroredStrategy drives its replicas from one process, over
    this host's devices. The audited process gets N logical CPU devices before the user's code runs, as the room's
    data-parallel runs do, for the strategy FUNC makes over them (`tf.config.list_logical_devices("CPU")`)."""
    import tensorflow as tf
    tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
                                               [tf.config.LogicalDeviceConfiguration()] * world)


# tf.function compiles the loop's step, and fit's train function, in graph mode
OFFERS = Offers(devices=("cpu", "cuda", "ascend"),  # ascend: refused with the reason, by the adapter
                runs=({}, {"mode": "graph", "backend": "tf.function"}, {"api": "trainer"},
                      {"mode": "graph", "backend": "tf.function", "api": "trainer"}, {"replicas": "2"},
                      {"api": "trainer", "replicas": "2"}, {"mode": "graph", "backend": "tf.function", "api": "trainer",
                                                            "replicas": "2"}))
