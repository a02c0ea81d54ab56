"""replica-grads-summed

tf.distribute.MirroredStrategy (2 logical CPU devices), a custom loop as a port of a single-device loop writes it:
each replica's loss is the mean over its own rows, and its gradients go to apply_gradients inside strategy.run.
"The gradients are synced across all the replicas by summing them": the update is twice the single-device one on
the global batch (the tutorial divides each replica's loss by the global batch size, tf.nn.compute_average_loss).

Upstream: https://www.tensorflow.org/tutorials/distribute/custom_training
"""
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

RNG = np.random.default_rng(0)
X, T = RNG.normal(size=(8, 4)).astype(np.float32), RNG.normal(size=(8, 1)).astype(np.float32)
W = RNG.normal(size=(4, 1)).astype(np.float32)


def in_this_process():
    """In a process whose TF devices are not set up yet (the logical devices must come first)."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        layer = keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(W))
        layer.build((None, 4))
        opt = keras.optimizers.SGD(learning_rate=1.0)
    parts = [(X[:4], T[:4]), (X[4:], T[4:])]
    per_replica = strategy.experimental_distribute_values_from_function(
        lambda context: parts[context.replica_id_in_sync_group])

    def step(part):
        x, t = part
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(layer(x) - t))  # the single-device loop's loss, on this replica's rows
        grads = tape.gradient(loss, layer.trainable_variables)
        opt.apply_gradients(zip(grads, layer.trainable_variables))

    strategy.run(step, args=(per_replica,))
    moved = W - layer.kernel.numpy()  # lr 1: the gradient the update applied
    x, t = tf.constant(X), tf.constant(T)
    with tf.GradientTape() as tape:
        kernel = tf.Variable(W)
        loss = tf.reduce_mean(tf.square(x @ kernel - t))
    whole = tape.gradient(loss, kernel).numpy()
    print("update (lr 1) under the strategy", moved.ravel().tolist())
    print("one device on the batch        ", whole.ravel().tolist())
    assert np.allclose(moved, 2 * whole, atol=1e-5)


def test_a_mirrored_custom_loop_sums_the_replicas_gradients():
    """Run in a fresh process: a test process may have set up TF's devices already."""
    done = subprocess.run([sys.executable, __file__, "--here"], capture_output=True, text=True, timeout=300)
    print(done.stdout)
    assert done.returncode == 0, (done.stderr.strip().splitlines() or ["no output"])[-1]


if __name__ == "__main__" and "--here" in sys.argv:
    in_this_process()
elif __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_a_mirrored_custom_loop_sums_the_replicas_gradients()
    print("confirmed: replica-grads-summed")
