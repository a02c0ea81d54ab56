"""Keras `weight_decay` of SGD(momentum) and Adam is decoupled (w -= lr*wd*w before the step),
not L2 added to the gradient as torch/paddle SGD/Adam(weight_decay=) do."""
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf, keras

KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15: Keras 2, whose weights are tf.Variables
Variable = tf.Variable if KERAS2 else keras.Variable  # Keras 2 has no keras.Variable

w0, g, lr, wd = np.array([1.0, -2.0], np.float32), np.array([0.5, 0.25], np.float32), 0.1, 0.1
for name, make in [("momentum", lambda: keras.optimizers.SGD(lr, momentum=0.9, weight_decay=wd)),
                   ("adam", lambda: keras.optimizers.Adam(lr, epsilon=1e-8, weight_decay=wd))]:
    v = Variable(w0)
    opt = make()
    for _ in range(2):
        opt.apply_gradients([(tf.constant(g), v)])
    w = w0.astype(np.float64)
    coupled, decoupled = w.copy(), w.copy()
    if name == "momentum":
        buf_c = buf_d = None
        for _ in range(2):
            gc = g + wd * coupled; buf_c = gc if buf_c is None else 0.9 * buf_c + gc; coupled = coupled - lr * buf_c
            decoupled = decoupled - lr * wd * decoupled
            buf_d = g if buf_d is None else 0.9 * buf_d + g; decoupled = decoupled - lr * buf_d
    else:
        mc = vc = md = vd = 0.0
        for t in (1, 2):
            gc = g + wd * coupled
            mc = 0.9 * mc + 0.1 * gc; vc = 0.999 * vc + 0.001 * gc * gc
            coupled = coupled - lr * (mc / (1 - 0.9 ** t)) / (np.sqrt(vc / (1 - 0.999 ** t)) + 1e-8)
            decoupled = decoupled - lr * wd * decoupled
            md = 0.9 * md + 0.1 * g; vd = 0.999 * vd + 0.001 * g * g
            decoupled = decoupled - lr * (md / (1 - 0.9 ** t)) / (np.sqrt(vd / (1 - 0.999 ** t)) + 1e-8)
    print(f"{name}: keras {np.asarray(v)}  coupled-L2 {coupled}  decoupled {decoupled}")
    assert np.allclose(np.asarray(v), decoupled, atol=1e-6) and not np.allclose(np.asarray(v), coupled, atol=1e-4)
print("confirmed: Keras weight_decay is decoupled for SGD(momentum) and Adam;", tf.__version__, keras.__version__)
