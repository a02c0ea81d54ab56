"""Graph mode of the tensorflow adapter (--mode graph, backend label "tf.function"): the loop's step
and its optimizer update, each wrapped in tf.function. Keras' trainer compiles its own train function
(trainer.py) and needs nothing from here."""
# runner.py has imported tensorflow quietly before it imports this module (the package imports
# runner.py first), so this import loads nothing and prints nothing
import tensorflow as tf


def quiet_retracing():
    # every case builds a new model, so its tf.functions are new too: TF's "triggered
    # tf.function retracing" warning is expected here, not a sign of a loop bug
    tf.get_logger().addFilter(lambda record: "tf.function retracing" not in record.getMessage())


def compiled(fn):
    """fn as a tf.function: traced once per shape of its call (for the step: path, train/eval,
    backward, unconnected-gradient mode), then run as a graph."""
    return tf.function(fn)
