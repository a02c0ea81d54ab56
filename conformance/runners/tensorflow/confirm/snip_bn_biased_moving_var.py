"""Keras BatchNormalization updates moving_variance with the biased (1/n) batch variance;
torch (and the suite's oracle) use the unbiased (1/(n-1)) one. Keras momentum weighs the old value."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, keras

bn = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)
bn.build((None, 1))
x = np.array([[1.0], [3.0]], np.float32)
bn(tf.constant(x), training=True)
print("moving_mean", np.asarray(bn.moving_mean), "moving_variance", np.asarray(bn.moving_variance))
biased, unbiased = 0.9 * 1 + 0.1 * x.var(0), 0.9 * 1 + 0.1 * x.var(0, ddof=1)
print("biased", biased, "unbiased", unbiased)
assert np.allclose(bn.moving_mean, 0.1 * x.mean(0)) and np.allclose(bn.moving_variance, biased)
print("confirmed: biased batch variance;", tf.__version__, keras.__version__)
