"""Keras' constructor defaults, read back from the built objects (what a user gets by leaving the
argument out), next to torch's: BatchNormalization momentum 0.99 (the OLD statistic's weight: a new
batch weighs 0.01; torch 0.1) and epsilon 1e-3 (torch 1e-5), LayerNormalization epsilon 1e-3 (torch
1e-5), Adam/AdamW epsilon 1e-7 (torch 1e-8), AdamW weight_decay 0.004 (torch 0.01), SGD
learning_rate 0.01 (torch 1e-3). Adam/AdamW learning_rate 0.001, betas (0.9, 0.999) and SGD momentum 0
agree with torch. One SGD step shows the learning rate in use."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, keras

print("tf", tf.__version__, "keras", keras.__version__)
bn = keras.layers.BatchNormalization(); bn.build((None, 4))
ln = keras.layers.LayerNormalization(); ln.build((None, 4))
print("BatchNormalization momentum", bn.momentum, "(new batch weighs", round(1 - bn.momentum, 6), ") epsilon", bn.epsilon)
print("LayerNormalization epsilon", ln.epsilon)
for make in (keras.optimizers.SGD, keras.optimizers.Adam, keras.optimizers.AdamW):
    o = make()
    print(make.__name__, "learning_rate", float(o.learning_rate), "weight_decay", o.weight_decay,
          "epsilon", getattr(o, "epsilon", "-"), "momentum", getattr(o, "momentum", "-"),
          "betas", (getattr(o, "beta_1", "-"), getattr(o, "beta_2", "-")))
w = tf.Variable([1.0, 2.0])
keras.optimizers.SGD().apply_gradients([(tf.constant([1.0, 1.0]), w)])
print("one default SGD step with gradient 1:", w.numpy(), "(lr 0.01 moves it by 0.01)")
# the moving mean after one batch of a default BatchNormalization (moving mean starts at 0)
x = tf.constant(np.full((4, 4), 10.0, np.float32))
bn(x, training=True)
print("moving_mean after one batch of 10s:", bn.moving_mean.numpy(), "(0.01 * 10; torch's default gives 1.0)")
