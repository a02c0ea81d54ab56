"""compiled-step-decays-before-raising

Keras: model.fit compiled (run_eagerly=False, a tf.function train step) with an optimizer that has weight_decay:
the optimizer applies its decay to the variables before the step's gradients (Keras folds decay into apply as
`variable.assign_sub(variable * wd * lr)` ahead of the update), inside the same graph as the loss. When the loss
op then fails (here a label of -100 outside the valid range), the graph execution raises, but the decay already
assigned stays: every optimizer variable has shrunk by lr * wd and none was updated by a gradient. The same step
with run_eagerly=True raises before the optimizer runs and leaves the variables as they were; torch's step
raises before any update. A custom loop's step written as TF's guide writes it (loss, tape.gradient and
apply_gradients in one tf.function) does the same, with SGD and AdamW alike; run eagerly, it raises first.

Upstream: no upstream page states it.
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
keras.utils.set_random_seed(0)

X = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
LABELS = np.array([-100, 2, 1, 1], np.int64)  # sample 0 marked "ignore" as data prepared for torch is
LR, WD = 0.1, 0.01


def step(run_eagerly):
    """The kernel before and after one fit step that raises, and whether it raised."""
    model = keras.Sequential([keras.layers.Dense(3)])
    model.build((None, 3))
    before = model.layers[0].kernel.numpy().copy()
    model.compile(keras.optimizers.SGD(learning_rate=LR, weight_decay=WD),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=run_eagerly)
    try:
        model.fit(X, LABELS, batch_size=4, epochs=1, verbose=0)
        raised = False
    except tf.errors.InvalidArgumentError:
        raised = True
    return before, model.layers[0].kernel.numpy(), raised


def test_a_compiled_step_that_raises_has_already_decayed():
    before, after, raised = step(run_eagerly=False)
    print("compiled: raised", raised, "| kernel after / before", np.unique(np.round(after / before, 6)))
    assert raised and np.allclose(after, before * (1 - LR * WD), rtol=1e-6)
    before, after, raised = step(run_eagerly=True)
    print("eager:    raised", raised, "| kernel unchanged", np.array_equal(after, before))
    assert raised and np.array_equal(after, before)


def custom_step(optimizer, compiled):
    """The kernel before and after one step of a custom loop (TF's guide: loss, tape.gradient and
    apply_gradients in one function), wrapped in tf.function or not, and whether it raised."""
    model = keras.Sequential([keras.layers.Dense(3)])
    model.build((None, 3))
    before = model.layers[0].kernel.numpy().copy()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss
    try:
        (tf.function(train_step) if compiled else train_step)(X, LABELS)
        raised = False
    except tf.errors.InvalidArgumentError:
        raised = True
    return before, model.layers[0].kernel.numpy(), raised


def test_a_custom_tf_function_step_that_raises_has_already_decayed():
    for name, make in (("SGD", lambda: keras.optimizers.SGD(learning_rate=LR, weight_decay=WD)),
                       ("AdamW", lambda: keras.optimizers.AdamW(learning_rate=LR, weight_decay=WD))):
        before, after, raised = custom_step(make(), compiled=True)
        print(f"custom tf.function step, {name}: raised", raised, "| kernel after / before",
              np.unique(np.round(after / before, 6)))
        assert raised and np.allclose(after, before * (1 - LR * WD), rtol=1e-6)
        before, after, raised = custom_step(make(), compiled=False)
        print(f"custom eager step, {name}: raised", raised, "| kernel unchanged", np.array_equal(after, before))
        assert raised and np.array_equal(after, before)


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_a_compiled_step_that_raises_has_already_decayed()
    test_a_custom_tf_function_step_that_raises_has_already_decayed()
    print("confirmed: compiled-step-decays-before-raising")
