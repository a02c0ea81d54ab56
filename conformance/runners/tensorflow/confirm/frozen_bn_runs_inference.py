"""frozen-bn-runs-inference

Keras: a BatchNormalization frozen with the layer switch (layer.trainable = False) runs in inference
mode whatever `training` says (custom loop with training=True, and fit): it normalises with its moving
statistics, leaves them alone, and passes the inference-mode gradient upstream. Freezing gamma and beta
one by one (Keras 3 variable.trainable = False) leaves it in training mode. The reference semantics stop
only the frozen parameters' gradients: in a train step the layer still normalises with the batch and
updates its running statistics.

Upstream: https://keras.io/api/layers/normalization_layers/batch_normalization/ ("About setting
layer.trainable = False on a BatchNormalization layer")
"""
import os
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's C++ INFO/WARNING lines; before the import
warnings.simplefilter("ignore")
_null, _stderr = os.open(os.devnull, os.O_WRONLY), os.dup(2)
os.dup2(_null, 2)  # TF 2.21 prints its oneDNN notice through absl at import, past TF_CPP_MIN_LOG_LEVEL
try:
    import numpy as np
    import tensorflow as tf
    import keras
finally:
    os.dup2(_stderr, 2)
    os.close(_stderr)
    os.close(_null)
tf.get_logger().setLevel("ERROR")  # TF 2.15: "Gradients do not exist for variables ..."
KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15 ships Keras 2, whose weights are tf.Variables

X = tf.random.stateless_normal((8, 3), [1, 2]) * 3.0 + 1.0  # far from moving mean 0 / variance 1
T = tf.zeros((8, 3))


def train_step(freeze, training=True):
    """Dense(identity) -> BatchNormalization, one forward/backward with `training`; returns the BN layer,
    the loss and the gradient reaching the Dense kernel."""
    fc = keras.layers.Dense(3, kernel_initializer="identity")
    fc.build((None, 3))
    bn = keras.layers.BatchNormalization()
    bn.build((None, 3))
    freeze(bn)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(bn(fc(X), training=training) - T))
    return bn, float(loss), tape.gradient(loss, fc.kernel).numpy()


def layer_switch(bn):
    bn.trainable = False


def weights_only(bn):
    bn.gamma.trainable = False
    bn.beta.trainable = False


def nothing(bn):
    pass


def test_layer_switch_runs_inference_in_a_train_step():
    bn, loss, g = train_step(layer_switch)
    _, inference_loss, inference_g = train_step(nothing, training=False)
    _, train_loss, train_g = train_step(nothing)
    print(f"bn.trainable = False, training=True: loss {loss:.5f} (inference {inference_loss:.5f}, batch statistics "
          f"{train_loss:.5f}), moving_mean {bn.moving_mean.numpy()}, gradient to fc.kernel (diag) "
          f"{np.diag(g).round(4)} (inference {np.diag(inference_g).round(4)}, train {np.diag(train_g).round(4)})")
    assert np.isclose(loss, inference_loss, rtol=1e-6) and not np.isclose(loss, train_loss, rtol=1e-2)
    assert not np.any(bn.moving_mean.numpy()) and np.all(bn.moving_variance.numpy() == 1.0)
    assert np.allclose(g, inference_g, rtol=1e-5) and not np.allclose(g, train_g, rtol=1e-2)


def test_layer_switch_runs_inference_under_fit():
    keras.utils.set_random_seed(0)
    fc = keras.layers.Dense(3, kernel_initializer="identity")
    fc.build((None, 3))
    bn = keras.layers.BatchNormalization()
    bn.build((None, 3))
    bn.trainable = False
    model = keras.Sequential([fc, bn])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    loss = model.fit(X, T, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"][0]
    _, inference_loss, _ = train_step(nothing, training=False)
    print(f"fit with bn.trainable = False: loss {loss:.5f} (inference {inference_loss:.5f}), "
          f"moving_mean {bn.moving_mean.numpy()}, moving_variance {bn.moving_variance.numpy()}")
    assert np.isclose(loss, inference_loss, rtol=1e-5) and not np.any(bn.moving_mean.numpy())
    assert np.all(bn.moving_variance.numpy() == 1.0)


def test_freezing_gamma_and_beta_one_by_one_keeps_training_mode():
    if KERAS2:  # Keras 2 weights are tf.Variables, whose trainable flag is fixed at creation
        print("Keras 2: no per-weight trainable switch; only the layer switch exists")
        return
    bn, loss, _ = train_step(weights_only)
    _, train_loss, _ = train_step(nothing)
    print(f"gamma/beta.trainable = False (Keras 3): loss {loss:.5f} (batch statistics {train_loss:.5f}), "
          f"moving_mean {bn.moving_mean.numpy().round(4)}, bn.trainable {bn.trainable}")
    assert np.isclose(loss, train_loss, rtol=1e-6) and np.any(bn.moving_mean.numpy())


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_layer_switch_runs_inference_in_a_train_step()
    test_layer_switch_runs_inference_under_fit()
    test_freezing_gamma_and_beta_one_by_one_keeps_training_mode()
    print("confirmed: frozen-bn-runs-inference")
