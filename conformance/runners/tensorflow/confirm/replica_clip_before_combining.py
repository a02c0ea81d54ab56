"""replica-clip-before-combining

Keras 3 under tf.distribute.MirroredStrategy (2 logical CPU devices), a custom loop that hands each replica's
gradients to apply_gradients inside strategy.run, with global_clipnorm: each replica's gradient is clipped to the
norm before the replicas' gradients are summed, so the update is the sum of two clipped gradients (up to twice the
norm), never the combined gradient clipped. fit on a model compiled in the strategy's scope does the same with each
replica's share (its gradient of the loss fit halves). Keras 2 (TF 2.15) clips after the sum.

Upstream: no upstream page states it.
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
NORM = 0.05


def grad(x, t):
    kernel = tf.Variable(W)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.constant(x) @ kernel - tf.constant(t)))
    return tape.gradient(loss, kernel).numpy()


def clipped(g):
    return g * min(1.0, NORM / np.linalg.norm(g))


def in_this_process():
    """In a process whose TF devices are not set up yet (the logical devices must come first)."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        layer = keras.layers.Dense(1, use_bias=False, kernel_initializer=keras.initializers.Constant(W))
        layer.build((None, 4))
        opt = keras.optimizers.SGD(learning_rate=1.0, global_clipnorm=NORM)
    parts = [(X[:4], T[:4]), (X[4:], T[4:])]
    per_replica = strategy.experimental_distribute_values_from_function(
        lambda context: parts[context.replica_id_in_sync_group])

    def step(part):
        x, t = part
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(layer(x) - t))
        opt.apply_gradients(zip(tape.gradient(loss, layer.trainable_variables), layer.trainable_variables))

    strategy.run(step, args=(per_replica,))
    moved = W - layer.kernel.numpy()  # lr 1: the update applied
    apart = clipped(grad(X[:4], T[:4])) + clipped(grad(X[4:], T[4:]))
    together = clipped(grad(X[:4], T[:4]) + grad(X[4:], T[4:]))
    print("update norm", float(np.linalg.norm(moved)), "| clipped apart then summed", float(np.linalg.norm(apart)),
          "| summed then clipped", float(np.linalg.norm(together)))
    assert np.allclose(moved, apart, atol=1e-6) and not np.allclose(moved, together, atol=1e-3)

    # fit on a model compiled in the strategy's scope: each replica's share is its gradient of a loss fit scales by
    # the replica count (half its own gradient), and the clipped shares are summed
    with strategy.scope():
        dense = keras.layers.Dense(1, use_bias=False, kernel_initializer=keras.initializers.Constant(W))
        model = keras.Sequential([keras.Input((4,)), dense])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0, global_clipnorm=NORM), loss="mse")
    model.fit(X, T, batch_size=8, epochs=1, shuffle=False, verbose=0)
    moved = W - dense.kernel.numpy()
    shares = clipped(grad(X[:4], T[:4]) / 2) + clipped(grad(X[4:], T[4:]) / 2)
    together = clipped((grad(X[:4], T[:4]) + grad(X[4:], T[4:])) / 2)
    print("fit: update norm", float(np.linalg.norm(moved)), "| shares clipped then summed",
          float(np.linalg.norm(shares)), "| the mean clipped", float(np.linalg.norm(together)))
    assert np.allclose(moved, shares, atol=1e-6) and not np.allclose(moved, together, atol=1e-3)


def test_each_replica_clips_its_own_gradient_before_the_sum():
    """Run in a fresh process: a test process may have set up TF's devices already."""
    done = subprocess.run([sys.executable, __file__, "--here"], capture_output=True, text=True, timeout=300)
    print(done.stdout)
    assert done.returncode == 0, (done.stderr.strip().splitlines() or ["no output"])[-1]


if __name__ == "__main__" and "--here" in sys.argv:
    in_this_process()
elif __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_each_replica_clips_its_own_gradient_before_the_sum()
    print("confirmed: replica-clip-before-combining")
