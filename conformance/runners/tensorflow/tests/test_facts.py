"""TF / Keras facts the adapter relies on that no confirm snippet shows (no variant: the reference
semantics agree with them, or the adapter works around them, or they make a case unsupported),
written as plain Keras code from TF's and Keras' documentation."""
import inspect

import numpy as np
import pytest

from .common import KERAS2, dense, keras, tf, tf_log_records, variable


# ---------------------------------------------------------------- gradients (tf.GradientTape docs)
@pytest.mark.skipif(KERAS2, reason="Keras 2 weights are plain tf.Variables, which take ZERO; "
                                    "tensorflow#116636 is about Keras 3 variables")
def test_unconnected_zero_still_fails_on_keras_variables():
    """tensorflow#116636: TF 2.21 raises on UnconnectedGradients.ZERO with Keras 3 variables; the
    adapter passes their backing tf.Variables (`.value`) instead. When this test fails, TF fixed it:
    drop the workaround in TensorFlowRunner._train_step."""
    a, b = dense(4, 4), dense(2, 4)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(b(tf.ones((3, 4))) ** 2)
    with pytest.raises(AttributeError, match="_type_enum"):
        tape.gradient(loss, a.trainable_variables + b.trainable_variables,
                      unconnected_gradients=tf.UnconnectedGradients.ZERO)


def test_apply_gradients_drops_none_with_a_warning():
    # Keras filters (None, variable) pairs, warns, and leaves the variable alone (no decay either)
    a, b = dense(4, 4), dense(2, 4)
    variables = a.trainable_variables + b.trainable_variables
    before = a.kernel.numpy().copy()
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(b(tf.ones((3, 4))) ** 2)
    grads = tape.gradient(loss, variables)
    opt = keras.optimizers.SGD(0.1, weight_decay=0.5)
    if KERAS2:  # Keras 2 logs the warning through TF's logger instead of warnings.warn
        with tf_log_records() as records:
            opt.apply_gradients(zip(grads, variables))
        assert any("Gradients do not exist for variables" in r.getMessage() for r in records)
    else:
        with pytest.warns(UserWarning, match="Gradients do not exist for variables"):
            opt.apply_gradients(zip(grads, variables))
    np.testing.assert_array_equal(before, a.kernel.numpy())
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        keras.optimizers.SGD(0.1).apply_gradients([(None, a.kernel)])


# ---------------------------------------------------------------- optimizers (keras.io docs)
def test_plain_sgd_weight_decay_equals_coupled_l2():
    # without momentum, decoupled and coupled decay coincide: coupled-l2-numerics[sgd] conforms
    w0, g = np.array([1.0, -2.0], np.float32), np.array([0.5, 0.25], np.float32)
    v = variable(w0)
    keras.optimizers.SGD(0.1, weight_decay=0.1).apply_gradients([(tf.constant(g), v)])
    np.testing.assert_allclose(v.numpy(), w0 - 0.1 * (g + 0.1 * w0), atol=1e-7)


def test_global_clipnorm_spans_the_gradients_given():
    # keras.io: "the gradient of all weights is clipped so that their global norm is no higher"
    a, b = variable([3.0]), variable([4.0])
    keras.optimizers.SGD(1.0, global_clipnorm=1.0).apply_gradients([(tf.constant([3.0]), a), (tf.constant([4.0]), b)])
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], [3.0 - 0.6, 4.0 - 0.8], rtol=1e-6)


def test_keras_optimizer_refuses_a_variable_unfrozen_after_its_first_update():
    """What makes unfreeze-resumes[*,default] unsupported, asked of Keras directly: an optimizer updates
    only the variables of its first apply_gradients."""
    a, b = dense(3, 4), dense(2, 3)
    a.trainable = False
    opt = keras.optimizers.SGD(0.1)
    opt.apply_gradients(zip([tf.ones_like(v) for v in b.trainable_variables], b.trainable_variables))
    a.trainable = True
    with pytest.raises((KeyError, ValueError)):
        opt.apply_gradients(zip([tf.ones_like(a.kernel)], [a.kernel]))


# ---------------------------------------------------------------- layers and tracking
def test_batchnorm_statistics_are_non_trainable_variables():
    bn = keras.layers.BatchNormalization()
    bn.build((None, 3))

    def short(v):  # Keras 2 variables have no .path: their tf.Variable name, e.g. "gamma:0"
        return (v.name.split(":")[0] if KERAS2 else v.path).split("/")[-1]
    assert {short(v) for v in bn.trainable_variables} == {"gamma", "beta"}
    assert {short(v) for v in bn.non_trainable_variables} == {"moving_mean", "moving_variance"}


@pytest.mark.parametrize("container", [list, dict, tuple])
def test_keras_tracks_layers_in_plain_containers(container):
    # Keras 3 wraps list/dict attributes in tracking proxies; on the TF backend a tuple attribute is
    # wrapped by TF's own trackable data structures. So plain containers register (unlike torch).
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            blocks = [keras.layers.Dense(4), keras.layers.Dense(4)]
            self.blocks = dict(zip("ab", blocks)) if container is dict else container(blocks)
            self.head = keras.layers.Dense(2)

        def call(self, x):
            for block in (self.blocks.values() if container is dict else self.blocks):
                x = block(x)
            return self.head(x)

    net = Net()
    net(tf.ones((2, 4)))
    assert len(net.trainable_variables) == 6


def test_training_flag_reaches_a_layer_held_in_a_plain_list():
    # Keras has no train/eval mode state: `training` given to the outer call propagates to the
    # layers called inside it, wherever they are held
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.blocks = [keras.layers.BatchNormalization()]

        def call(self, x):
            return self.blocks[0](x)

    net = Net()
    net.blocks[0].build((None, 2))
    net.build((None, 2))
    before = net.blocks[0].moving_mean.numpy().copy()
    net(tf.ones((4, 2)) * 3.0, training=False)
    np.testing.assert_array_equal(before, net.blocks[0].moving_mean.numpy())
    net(tf.ones((4, 2)) * 3.0, training=True)
    assert not np.array_equal(before, net.blocks[0].moving_mean.numpy())


def test_trainer_compiles_again_after_a_freeze_as_keras_requires():
    """Keras: a changed `trainable` takes effect in fit only after compile() again. Without it the
    frozen layer still trains (the adapter compiles again: test_modes)."""
    x = np.random.RandomState(0).randn(8, 4).astype("float32")
    t = np.zeros((8, 2), "float32")
    moved = {}
    for recompile in (False, True):
        a, b = dense(3, 4), dense(2, 3)
        model = keras.Sequential([a, b])
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        model.fit(x, t, batch_size=8, epochs=1, verbose=0)
        a.trainable = False
        if recompile:
            model.compile(optimizer=model.optimizer, loss="mse")
        before = a.kernel.numpy().copy()
        model.fit(x, t, batch_size=8, epochs=1, verbose=0)
        moved[recompile] = not np.array_equal(before, a.kernel.numpy())
    assert moved == {False: True, True: False}


# ---------------------------------------------------------------- Embedding
def test_keras_embedding_has_no_padding_idx_and_mask_zero_keeps_row_0_gradient():
    # what makes embedding-padding-row unsupported: mask_zero is no padding_idx
    assert "padding_idx" not in inspect.signature(keras.layers.Embedding).parameters
    emb, out = keras.layers.Embedding(4, 2, mask_zero=True), dense(1, 2)
    emb.build((None,))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(out(emb(tf.constant([0, 3], tf.int64))) ** 2)
    assert np.any(tf.convert_to_tensor(tape.gradient(loss, emb.embeddings)).numpy()[0])


def embedding_rows_after(make_opt, batches, densify):
    emb = keras.layers.Embedding(4, 2)
    emb.build((None,))
    emb.embeddings.assign(np.ones((4, 2), np.float32))
    opt = make_opt()
    for idx in batches:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(emb(tf.constant(idx, tf.int64)) * np.array([[1.0, 2.0]], np.float32))
        grad = tape.gradient(loss, emb.embeddings)
        opt.apply_gradients([(tf.convert_to_tensor(grad) if densify else grad, emb.embeddings)])
    return emb.embeddings.numpy()


@pytest.mark.parametrize("make_opt", [lambda: keras.optimizers.SGD(0.1, momentum=0.9, weight_decay=0.1),
                                      lambda: keras.optimizers.Adam(0.1),
                                      lambda: keras.optimizers.AdamW(0.1, weight_decay=0.1)],
                         ids=["momentum+decay", "adam", "adamw"])
def test_sparse_update_moves_rows_not_looked_up_as_the_dense_one(make_opt):
    # Keras' optimizers keep dense state and decay, so rows left out of later batches are decayed and
    # moved by their state, as with the dense gradient (the question of tensorflow#14075); each row is
    # looked up once per batch here: adam-squares-each-lookup needs a duplicate
    sparse = embedding_rows_after(make_opt, [[0], [1]], densify=False)
    np.testing.assert_allclose(sparse, embedding_rows_after(make_opt, [[0], [1]], densify=True), rtol=1e-6)
    assert not np.allclose(sparse[0], embedding_rows_after(make_opt, [[0]], densify=False)[0])  # row 0 moved at step 2
