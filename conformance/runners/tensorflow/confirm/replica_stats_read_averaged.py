"""replica-stats-read-averaged

Keras 2 (TF 2.15) under tf.distribute.MirroredStrategy (2 logical CPU devices): BatchNormalization's moving
statistics are sync-on-read variables. Each replica updates its own copy from its own rows, and reading the
variable gives the mean of the copies. Keras 3 keeps them as mirrored variables whose copies differ, and reading
gives replica 0's.

Upstream: no upstream page states it.
"""
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

X = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)


def in_this_process():
    """In a process whose TF devices are not set up yet (the logical devices must come first)."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        bn = keras.layers.BatchNormalization(momentum=0.9)
        bn.build((None, 3))
    parts = [X[:4], X[4:]]
    per_replica = strategy.experimental_distribute_values_from_function(
        lambda context: parts[context.replica_id_in_sync_group])
    strategy.run(lambda x: bn(x, training=True), args=(per_replica,))
    copies = [c.numpy() for c in bn.moving_mean.values]
    own = [0.1 * X[:4].mean(0), 0.1 * X[4:].mean(0)]  # each replica's own update from zero
    print(type(bn.moving_mean).__name__, "read", bn.moving_mean.numpy().tolist(), "copies", [c.tolist() for c in copies])
    assert np.allclose(copies[0], own[0], atol=1e-6) and np.allclose(copies[1], own[1], atol=1e-6)
    assert np.allclose(bn.moving_mean.numpy(), (own[0] + own[1]) / 2, atol=1e-6)


def test_each_replica_keeps_its_statistics_and_a_read_averages_them():
    """Run in a fresh process: a test process may have set up TF's devices already."""
    done = subprocess.run([sys.executable, __file__, "--here"], capture_output=True, text=True, timeout=300)
    print(done.stdout)
    assert done.returncode == 0, (done.stderr.strip().splitlines() or ["no output"])[-1]


if __name__ == "__main__" and "--here" in sys.argv:
    in_this_process()
elif __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_each_replica_keeps_its_statistics_and_a_read_averages_them()
    print("confirmed: replica-stats-read-averaged")
