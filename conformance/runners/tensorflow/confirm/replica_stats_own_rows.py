"""replica-stats-own-rows

Keras' fit on a model compiled in a tf.distribute.MirroredStrategy's scope (2 logical CPU devices), one batch of 8:
without BatchNorm the update is the single-device one on the whole batch, for a mean loss and a summed one alike
(fit weighs each replica's loss so). With BatchNorm each replica normalises its 4 rows with their own statistics,
so the update is the mean of the two replicas' gradients over their own normalised rows, not the single-device one
(what the moving statistics read afterwards hold is replica-stats-read-averaged's question on Keras 2). A custom
loop under the same strategy sums the replicas' unweighted gradients instead (replica-grads-summed).

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
EPS = 1e-3  # BatchNormalization's default epsilon


def grad(x, t, normalised, summed=False):
    """The squared error's gradient on these rows (mean or sum), after normalising them with their own statistics."""
    kernel, h = tf.Variable(W), tf.constant(x)
    with tf.GradientTape() as tape:
        if normalised:
            mean, var = tf.nn.moments(h, [0])
            h = (h - mean) / tf.sqrt(var + EPS)
        error = tf.square(h @ kernel - tf.constant(t))
        loss = tf.reduce_sum(error) if summed else tf.reduce_mean(error)
    return tape.gradient(loss, kernel).numpy()


def in_this_process():
    """In a process whose TF devices are not set up yet (the logical devices must come first)."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    for normalised, summed in ((False, False), (False, True), (True, False)):
        with strategy.scope():
            dense = keras.layers.Dense(1, use_bias=False, kernel_initializer=keras.initializers.Constant(W))
            bn = keras.layers.BatchNormalization(center=False, scale=False)
            model = keras.Sequential([keras.Input((4,)), *([bn] if normalised else []), dense])
            loss = keras.losses.MeanSquaredError(reduction="sum" if summed else "sum_over_batch_size")
            model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01), loss=loss)
        model.fit(X, T, batch_size=8, epochs=1, shuffle=False, verbose=0)
        moved = (W - dense.kernel.numpy()) / 0.01  # the gradient applied
        whole = grad(X, T, normalised, summed)
        print("BatchNorm" if normalised else "no BatchNorm", "summed loss" if summed else "mean loss",
              "| gradient applied", moved.ravel(), "| one device on the batch", whole.ravel())
        if normalised:
            mean = (grad(X[:4], T[:4], True) + grad(X[4:], T[4:], True)) / 2
            print("   mean of the replicas' own-rows gradients", mean.ravel())
            assert np.allclose(moved, mean, atol=1e-3) and not np.allclose(moved, whole, atol=1e-2)
        else:
            assert np.allclose(moved, whole, atol=1e-3)


def test_fit_normalises_each_replicas_rows_apart_and_weighs_the_gradients_as_one_device():
    """Run in a fresh process: a test process may have set up TF's devices already."""
    done = subprocess.run([sys.executable, __file__, "--here"], capture_output=True, text=True, timeout=300)
    print(done.stdout)
    assert done.returncode == 0, (done.stderr.strip().splitlines() or ["no output"])[-1]


if __name__ == "__main__" and "--here" in sys.argv:
    in_this_process()
elif __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_fit_normalises_each_replicas_rows_apart_and_weighs_the_gradients_as_one_device()
    print("confirmed: replica-stats-own-rows")
