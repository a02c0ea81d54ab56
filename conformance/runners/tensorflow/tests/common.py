"""What the tensorflow room's tests share: the spec by instance id, one case's record through the
adapter (in-process, as the worker runs it), and the small Keras pieces a hand-written loop is made of.

Runs in the `tensorflow` (Keras 3) and `tensorflow215` (Keras 2) tox envs. Each check is written the
way a user of the installed Keras writes it: where Keras 2 lacks an API (keras.Variable, variable.path,
a per-weight trainable setter) a small `if KERAS2:` branch asks the same question the Keras 2 way."""
import contextlib
import logging

from conformance.engine.judge import run_instance
from conformance.oracle.known import load_known, profile
from conformance.runners.tensorflow.runner import KERAS2, TensorFlowRunner, keras, tf  # imports TF quietly
from conformance.spec import load_spec

SPEC = {i.id: i for i in load_spec()}


def record(instance_id, **axes):
    """The suite's record of one instance on the tensorflow adapter of the run `axes` name (eager loop by default)."""
    runner = TensorFlowRunner(**axes)
    run = runner.run.replace(version=TensorFlowRunner.version())
    return run_instance(runner, SPEC[instance_id], profile(load_known("tensorflow"), run))


def dense(units, inputs, **kw):
    layer = keras.layers.Dense(units, **kw)
    layer.build((None, inputs))
    return layer


def variable(value):
    """A standalone weight: keras.Variable in Keras 3; Keras 2 has none, its weights are tf.Variables."""
    return tf.Variable(value) if KERAS2 else keras.Variable(value)


def load(layers, init):
    """Assign the canonical initial values to hand-built Dense layers ({name: layer}); Dense kernels are
    (in, out), as the canonical weights: no transpose."""
    for name, layer in layers.items():
        layer.kernel.assign(init[f"{name}.weight"])
        layer.bias.assign(init[f"{name}.bias"])


@contextlib.contextmanager
def tf_log_records():
    """The records TF's logger emits inside the block (Keras 2 warns through it, not `warnings`).
    Its filters and level are lifted meanwhile: each TensorFlowRunner adds a filter that hides
    "Gradients do not exist" from the progress output, and the confirm snippets (collected in the
    same pytest process) set its level to ERROR."""
    logger, records = tf.get_logger(), []
    handler = logging.Handler()
    handler.emit = records.append
    filters, level = list(logger.filters), logger.level
    for f in filters:
        logger.removeFilter(f)
    logger.setLevel(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        for f in filters:
            logger.addFilter(f)
