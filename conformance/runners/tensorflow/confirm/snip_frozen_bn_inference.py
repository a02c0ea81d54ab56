"""A BatchNormalization frozen with the layer switch (`layer.trainable = False`) runs in inference
mode even when called with training=True (custom loop) or under fit: its moving statistics stay put,
it normalises with them, and the gradient reaching the layer before it is the inference-mode one.
Freezing its two weights one by one (Keras 3 `variable.trainable = False`) does NOT do this: the layer
still normalises with the batch and moves its statistics. Keras 2 and Keras 3 alike (layer switch)."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, keras

KERAS2 = keras.__version__.startswith("2.")
x = tf.random.stateless_normal((8, 3), [1, 2]) * 3.0 + 1.0   # far from moving mean 0 / variance 1
t = tf.zeros((8, 3))


def run(freeze):
    fc = keras.layers.Dense(3, kernel_initializer="identity"); fc.build((None, 3))
    bn = keras.layers.BatchNormalization(); bn.build((None, 3))
    freeze(bn)
    with tf.GradientTape() as tape:
        y = bn(fc(x), training=True)
        loss = tf.reduce_mean(tf.square(y - t))
    g = tape.gradient(loss, fc.kernel)
    return bn, float(loss), g.numpy()


def layer_switch(bn):
    bn.trainable = False


def weights_only(bn):
    bn.gamma.trainable = False
    bn.beta.trainable = False


def nothing(bn):
    pass


print("tf", tf.__version__, "keras", keras.__version__)
bn, loss, g = run(layer_switch)
inference = float(tf.reduce_mean(tf.square(bn(x, training=False))))
print("layer.trainable=False, training=True: loss", round(loss, 5), "== inference loss", round(inference, 5),
      "| moving_mean still", bn.moving_mean.numpy(), "| gradient to fc.kernel (diag)", np.diag(g).round(4))
_, train_loss, train_g = run(nothing)
print("not frozen,           training=True: loss", round(train_loss, 5), "(batch statistics)",
      "| gradient to fc.kernel (diag)", np.diag(train_g).round(4))
if not KERAS2:
    bn, loss, _ = run(weights_only)
    print("gamma/beta.trainable=False (Keras 3): loss", round(loss, 5), "| moving_mean", bn.moving_mean.numpy().round(4),
          "| bn.trainable", bn.trainable)
# under fit: the same layer switch
fc = keras.layers.Dense(3, kernel_initializer="identity"); fc.build((None, 3))
bn = keras.layers.BatchNormalization(); bn.build((None, 3)); bn.trainable = False
model = keras.Sequential([fc, bn]); model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
fit_loss = model.fit(x, t, batch_size=8, epochs=1, shuffle=False, verbose=0).history["loss"][0]
print("fit with bn.trainable=False: loss", round(fit_loss, 5), "| moving_mean still", bn.moving_mean.numpy())
