"""Keras SGD(momentum) keeps a velocity in parameter units, v = momentum * v - lr * g; w += v, so the
learning rate is folded into the velocity when each gradient arrives. torch's SGD (and the suite's
reference) keeps the raw gradients, buf = momentum * buf + g; w -= lr * buf, so a new learning rate
scales the whole buffer at once. Equal while lr is constant; they part as soon as lr changes (a
schedule), e.g. lr 0 for two steps then 0.1: Keras moves by 0.1 * g only, torch by 0.1 * (g + 0.9 g + 0.81 g)."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf, keras

print("tf", tf.__version__, "keras", keras.__version__)
w = tf.Variable([1.0])
opt = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
g = tf.constant([1.0])   # the same gradient every step
lrs = [0.0, 0.0, 0.1]
torch_w, buf = 1.0, None
for lr in lrs:
    opt.learning_rate = lr                      # the way Keras users change it between steps
    opt.apply_gradients([(g, w)])
    buf = 1.0 if buf is None else 0.9 * buf + 1.0
    torch_w -= lr * buf
print("after lr", lrs, "Keras w =", round(float(w.numpy()[0]), 6), "| torch-style buffer w =", round(torch_w, 6))
