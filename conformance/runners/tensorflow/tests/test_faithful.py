"""The adapter is the Keras code a user writes: per layer kind and optimizer feature, its run equals
the same schedule written by hand as a Keras custom training loop (tf.GradientTape + apply_gradients),
or as compile + fit for the trainer, and it builds Keras' own layers and optimizers."""
import numpy as np
import pytest

from conformance.engine.scenario import batch, initial_values, observe
from conformance.oracle.reference import ReferenceRunner
from conformance.runners.tensorflow.runner import TensorFlowRunner

from .common import KERAS2, SPEC, dense, keras, load, record, tf


# ---------------------------------------------------------------- settings left to Keras' defaults
def test_defaults_are_read_back_from_the_built_objects():
    """Settings left out reach Keras' constructors as left out: the values read back are Keras'
    documented defaults (keras.io: AdamW weight_decay 0.004, epsilon 1e-7; BatchNormalization momentum
    0.99 = new batch 0.01, epsilon 1e-3; LayerNormalization epsilon 1e-3; SGD learning_rate 0.01)."""
    case = SPEC["default-adamw-step"].case
    runner = TensorFlowRunner()
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    got = runner.defaults()
    assert got.pop("optimizer.betas") == pytest.approx([0.9, 0.999], rel=1e-6)
    assert got == pytest.approx({"optimizer.lr": 1e-3, "optimizer.weight_decay": 0.004, "optimizer.eps": 1e-7},
                                rel=1e-6)
    assert runner.opt.weight_decay == keras.optimizers.AdamW().weight_decay  # the same object a user gets
    for case_id, name, want in (("default-bn-momentum", "bn.momentum", 0.01), ("default-bn-eps", "bn.eps", 1e-3),
                                ("default-layernorm-eps", "ln.eps", 1e-3), ("default-lr[sgd]", "optimizer.lr", 0.01),
                                ("default-lr[momentum]", "optimizer.lr", 0.01),
                                ("default-momentum", "optimizer.momentum", 0.0)):
        obs = observe(TensorFlowRunner(), SPEC[case_id].case)
        assert obs.defaults == {name: pytest.approx(want, rel=1e-6)}, case_id
    got = record("default-lr[sgd]")
    assert got.verdict == "divergence" and [v.name for v in got.documented.variants] == ["sgd-default-lr-0.01"]


# ---------------------------------------------------------------- layer kinds
def test_adapter_batchnorm_is_faithful():
    """bn-custom-momentum-eps: neutral momentum 0.3 / eps 1e-3 is BatchNormalization(momentum=0.7, epsilon=1e-3)."""
    case = SPEC["bn-custom-momentum-eps"].case
    obs = observe(TensorFlowRunner(), case)
    init = initial_values(case)
    a, b = dense(3, 4), dense(2, 3)
    bn = keras.layers.BatchNormalization(momentum=0.7, epsilon=1e-3)
    bn.build((None, 3))
    load({"a": a, "b": b}, init)
    for var, role in ((bn.gamma, "weight"), (bn.beta, "bias"), (bn.moving_mean, "running_mean"),
                      (bn.moving_variance, "running_var")):
        var.assign(init[f"bn.{role}"])
    variables = a.trainable_variables + bn.trainable_variables + b.trainable_variables
    opt = keras.optimizers.SGD(0.1)
    for index in range(3):
        x, t = batch(case, index, ["a", "bn", "b"])
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(b(bn(a(tf.constant(x)), training=True)) - t))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        assert obs.steps[index].loss == float(loss)
    np.testing.assert_array_equal(obs.steps[-1].values["bn.running_var"], bn.moving_variance.numpy())
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], a.kernel.numpy())


def test_layernorm_is_keras_layer_normalization():
    """layernorm-training-numerics[sgd] through the adapter equals keras.layers.LayerNormalization(epsilon=...)
    trained by hand (gamma and beta are its weight and bias)."""
    case = SPEC["layernorm-training-numerics[sgd]"].case
    obs = observe(TensorFlowRunner(), case)
    init, spec = initial_values(case), case.model.layers
    fc, out = dense(spec["fc"].linear[1], spec["fc"].linear[0]), dense(spec["out"].linear[1], spec["out"].linear[0])
    ln = keras.layers.LayerNormalization(epsilon=spec["ln"].eps)
    ln.build((None, spec["ln"].layernorm))
    for var, name in ((fc.kernel, "fc.weight"), (fc.bias, "fc.bias"), (ln.gamma, "ln.weight"), (ln.beta, "ln.bias"),
                      (out.kernel, "out.weight"), (out.bias, "out.bias")):
        var.assign(init[name])
    variables = fc.trainable_variables + ln.trainable_variables + out.trainable_variables
    opt = keras.optimizers.SGD(case.optimizer.lr)
    for index in range(len(obs.steps)):
        x, t = batch(case, index, ["fc", "ln", "out"])
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(out(ln(fc(tf.constant(x)), training=True)) - t))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        assert obs.steps[index].loss == pytest.approx(float(loss), rel=1e-6)
    np.testing.assert_allclose(obs.steps[-1].values["ln.weight"], ln.gamma.numpy(), rtol=1e-6)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_conv_and_flatten_layouts_round_trip(mode):
    """Canonical OIHW conv weights go in as Keras' HWIO kernels on NHWC images, and the Dense after
    the image takes its rows in Flatten's H, W, C order; values() and grads() read them back in the
    canonical layout, and the function computed is the reference's (NCHW, torch's x.flatten(1))."""
    case, path = SPEC["conv-grad"].case, ["c1", "c2", "fc"]
    init = initial_values(case)
    runner = TensorFlowRunner(mode=mode)
    runner.build(case.model, init)
    runner.make_optimizer(case.optimizer)
    assert isinstance(runner.layers["c1"], keras.layers.Conv2D) and runner.layers["c1"].data_format == "channels_last"
    np.testing.assert_array_equal(runner.layers["c1"].kernel.numpy(), init["c1.weight"].transpose(2, 3, 1, 0))
    x, t = batch(case, 0, path)
    loss = runner.forward(path, x, t, train=True, backward=True)
    hwc_rows = init["fc.weight"].reshape(2, 4, 4, 2).transpose(1, 2, 0, 3).reshape(32, 2)
    np.testing.assert_array_equal(runner.layers["fc"].kernel.numpy(), hwc_rows)
    for name, value in runner.values().items():
        np.testing.assert_array_equal(value, init[name], err_msg=name)
    oracle = ReferenceRunner()
    oracle.build(case.model, init)
    oracle.make_optimizer(case.optimizer)
    assert loss == pytest.approx(oracle.forward(path, x, t, True, True), rel=1e-5)
    for name, grad in oracle.grads().items():
        np.testing.assert_allclose(runner.grads()[name], grad, rtol=1e-4, atol=1e-6, err_msg=name)


def test_embedding_gradient_goes_to_the_optimizer_sparse_and_is_reported_dense():
    case, path = SPEC["embedding-grad"].case, ["emb", "out"]
    runner = TensorFlowRunner()
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    x, t = batch(case, 0, path)
    runner.forward(path, x, t, train=True, backward=True)
    held = next(g for v, g in zip(runner.params, runner.grads_) if v is runner.variables["emb.weight"])
    assert isinstance(held, tf.IndexedSlices)  # what runner.update() hands apply_gradients
    grad, looked_up = runner.grads()["emb.weight"], sorted(set(x.tolist()))
    others = sorted(set(range(10)) - set(looked_up))
    assert grad.shape == (10, 4) and others and not np.any(grad[others])
    assert np.all(np.any(grad[looked_up], axis=1))


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_dropout_is_keras_dropout_identity_in_eval_not_in_train(mode):
    case, path = SPEC["dropout-on-in-train"].case, ["a", "drop", "b"]
    runner = TensorFlowRunner(mode=mode)
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    assert isinstance(runner.layers["drop"], keras.layers.Dropout) and runner.layers["drop"].rate == 0.5
    x, t = batch(case, 0, path)
    without = runner.forward(["a", "b"], x, t, train=False, backward=False)
    assert runner.forward(path, x, t, train=False, backward=False) == without
    assert runner.forward(path, x, t, train=True, backward=False) != without


def test_positional_dropout_rate_is_measured_and_a_default_bias_is_keras_own():
    """Dropout(0.5) written positionally: the fraction of ones it zeroes in train mode is measured; a Dense
    built without use_bias has Keras' default, a bias."""
    obs = observe(TensorFlowRunner(), SPEC["dropout-rate-positional[rate-0.5]"].case)
    assert obs.defaults == {"drop.rate": pytest.approx(0.5, abs=0.01)}
    assert observe(TensorFlowRunner(), SPEC["default-linear-bias"].case).defaults == {"a.bias": True}


# ---------------------------------------------------------------- cross-entropy: Keras' own loss objects
@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("instance_id, make, one_hot", [
    ("ce-ignore-index-set[sgd]", lambda: keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=0, reduction="sum_over_batch_size"), False),
    ("ce-default-from-logits[sgd]", lambda: keras.losses.SparseCategoricalCrossentropy(
        reduction="sum_over_batch_size"), False),
    ("ce-reduction-sum[sgd]", lambda: keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum"),
     False),
    ("ce-label-smoothing[sgd]", lambda: keras.losses.CategoricalCrossentropy(
        from_logits=True, label_smoothing=0.1, reduction="sum_over_batch_size"), True),
])
def test_cross_entropy_is_the_keras_loss_object_a_user_writes(mode, instance_id, make, one_hot):
    """The adapter's loss and gradient equal the Keras loss object written by hand on the same batch (labels
    one-hot for the smoothing CategoricalCrossentropy)."""
    case = SPEC[instance_id].case
    init = initial_values(case)
    runner = TensorFlowRunner(mode=mode)
    runner.build(case.model, init)
    runner.make_optimizer(case.optimizer)
    x, labels = batch(case, 0, ["a", "b"])
    got = runner.forward(["a", "b"], x, labels, train=True, backward=True, loss=case.cross_entropy)
    a, b = dense(5, 4), dense(3, 5)
    load({"a": a, "b": b}, init)
    with tf.GradientTape() as tape:
        want = make()(tf.one_hot(labels, 3) if one_hot else labels, b(a(x)))
    assert got == pytest.approx(float(want), rel=1e-6)
    np.testing.assert_allclose(runner.grads()["a.weight"], tape.gradient(want, a.kernel).numpy(), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- freezing
def test_adapter_reports_none_for_variables_outside_the_gradient_list():
    # default params = model.trainable_variables: a frozen weight is not asked for, so no gradient
    obs = observe(TensorFlowRunner(), SPEC["frozen-param-no-grad[sgd]"].case)
    assert obs.trainable["a.weight"] is False and obs.steps[0].grads["a.weight"] is None
    assert "a.weight" not in obs.optimizer_params and "b.weight" in obs.optimizer_params


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_layer_level_freeze_runs_batchnorm_in_inference(mode):
    """A BatchNormalization frozen with layer.trainable = False keeps its moving statistics in a train step
    (frozen-bn-runs-inference); freezing its gamma and beta one by one (Keras 3) leaves it training."""
    got = record("frozen-bn-stats-move[layer]", mode=mode)
    assert got.verdict == "divergence"
    assert "frozen-bn-runs-inference" in [v.name for v in got.documented.variants]
    held = {c.check: c.held for c in got.checks}
    assert held["value bn.running_mean @ step 0"] is False
    case = SPEC["frozen-bn-stats-move[layer]"].case
    runner = TensorFlowRunner(mode=mode)
    obs = observe(runner, case)
    assert runner.layers["bn"].trainable is False
    np.testing.assert_array_equal(obs.steps[-1].values["bn.running_mean"], obs.initial["bn.running_mean"])
    params = record("frozen-bn-stats-move[params]", mode=mode)
    assert params.verdict == ("unsupported" if KERAS2 else "conform")


def test_freeze_between_steps_is_the_layer_switch_and_the_loop_follows_it():
    """freeze: [a] after two steps is a.trainable = False; the loop hands the optimizer
    model.trainable_variables as they are now, so `a` gets no gradient and stays put from then on."""
    case = SPEC["freeze-after-optimizer[sgd,default]"].case
    runner = TensorFlowRunner()
    obs = observe(runner, case)
    assert runner.layers["a"].trainable is False and runner.optimizer_params() == ["b.weight", "b.bias"]
    assert obs.steps[2].grads["a.weight"] is None
    np.testing.assert_array_equal(obs.steps[3].values["a.weight"], obs.steps[1].values["a.weight"])
    assert not np.array_equal(obs.steps[3].values["b.weight"], obs.steps[1].values["b.weight"])
    assert record("freeze-after-optimizer[sgd,default]").verdict == "conform"


# ---------------------------------------------------------------- optimizer features
def test_decay_exclusion_is_exclude_from_weight_decay():
    """no_decay is optimizer.exclude_from_weight_decay(var_list=...): no-decay-biases[adamw] through the
    adapter equals the same loop written by hand, and the excluded biases differ from a run without it."""
    case = SPEC["no-decay-biases[adamw]"].case
    obs = observe(TensorFlowRunner(), case)
    init, o = initial_values(case), case.optimizer
    finals = {}
    for exclude in (True, False):
        a, b = dense(3, 4), dense(2, 3)
        load({"a": a, "b": b}, init)
        variables = a.trainable_variables + b.trainable_variables
        opt = keras.optimizers.AdamW(o.lr, weight_decay=o.weight_decay, beta_1=o.betas[0], beta_2=o.betas[1],
                                     epsilon=o.eps)
        if exclude:
            opt.exclude_from_weight_decay(var_list=[a.bias, b.bias])
        for index in range(len(obs.steps)):
            x, t = batch(case, index, ["a", "b"])
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(b(a(tf.constant(x))) - t))
            opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        finals[exclude] = {"a.bias": a.bias.numpy(), "a.weight": a.kernel.numpy()}
    np.testing.assert_array_equal(obs.steps[-1].values["a.bias"], finals[True]["a.bias"])
    np.testing.assert_array_equal(obs.steps[-1].values["a.weight"], finals[True]["a.weight"])
    assert not np.allclose(finals[True]["a.bias"], finals[False]["a.bias"], rtol=0, atol=1e-6)


def test_clip_norm_is_keras_clipnorm_per_weight():
    """clip_norm is clipnorm: each gradient clipped to its own norm (tf.clip_by_norm per gradient), unlike
    global_clipnorm over all of them."""
    case = SPEC["clip-per-variable[sgd]"].case
    runner = TensorFlowRunner()
    obs = observe(runner, case)
    assert runner.opt.clipnorm == case.optimizer.clip_norm and runner.opt.global_clipnorm is None
    init = initial_values(case)
    a, b = dense(3, 4), dense(2, 3)
    load({"a": a, "b": b}, init)
    variables = a.trainable_variables + b.trainable_variables
    opt = keras.optimizers.SGD(case.optimizer.lr)
    for index in range(len(obs.steps)):
        x, t = batch(case, index, ["a", "b"])
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(b(a(tf.constant(x))) - t))
        grads = [tf.clip_by_norm(g, case.optimizer.clip_norm) for g in tape.gradient(loss, variables)]
        opt.apply_gradients(zip(grads, variables))
    np.testing.assert_allclose(obs.steps[-1].values["a.weight"], a.kernel.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(obs.steps[-1].values["b.bias"], b.bias.numpy(), rtol=1e-6, atol=1e-7)
    assert record("clip-per-variable[sgd]").verdict == "conform"


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_lr_change_assigns_learning_rate_and_momentum_keeps_the_old_rate(mode):
    """set_lr is optimizer.learning_rate = lr between steps; Keras' momentum velocity already holds
    lr * g, so lr-change[momentum] diverges as momentum-velocity-scaled-by-lr says (graph mode too:
    the compiled update reads the variable)."""
    case = SPEC["lr-change[momentum]"].case
    runner = TensorFlowRunner(mode=mode)
    obs = observe(runner, case)
    assert len(obs.steps) == 3 and float(runner.opt.learning_rate) == pytest.approx(case.steps[-1].lr)
    got = record("lr-change[momentum]", mode=mode)
    assert got.verdict == "divergence"
    assert "momentum-velocity-scaled-by-lr" in [v.name for v in got.documented.variants]


# ---------------------------------------------------------------- Keras' trainer (--api trainer)
def test_trainer_is_faithful_to_compile_and_fit():
    """seed-2 through the adapter's trainer equals the same schedule written by hand as a Keras user
    trains: a subclassed model with its blocks in a plain list, compile(Adam, "mse"), one fit per batch."""
    case = SPEC["seed-2-plain-list-sublayers"].case
    obs = observe(TensorFlowRunner(mode="graph", api="trainer"), case)

    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.blocks = [dense(4, 4), dense(4, 4)]
            self.head = dense(2, 4)

        def call(self, x):
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    net = Net()
    load({"block0": net.blocks[0], "block1": net.blocks[1], "head": net.head}, initial_values(case))
    opt = case.optimizer
    net.compile(optimizer=keras.optimizers.Adam(opt.lr, beta_1=opt.betas[0], beta_2=opt.betas[1], epsilon=opt.eps),
                loss="mse")
    for index in range(2):
        x, t = batch(case, index, ["block0", "block1", "head"])
        history = net.fit(x, t, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
        assert obs.steps[index].loss == pytest.approx(history.history["loss"][0], rel=1e-6)
    for layer, name in zip([*net.blocks, net.head], ["block0", "block1", "head"]):
        np.testing.assert_allclose(obs.steps[-1].values[f"{name}.weight"], layer.kernel.numpy(), rtol=1e-5, atol=1e-7)


def test_trainer_loss_is_the_one_fit_reports_regularization_included():
    """fit reports the data loss plus model.losses (the per-weight L2 penalties), as the loop's loss does."""
    case = SPEC["per-param-decay-overrides[sgd]"].case
    init = initial_values(case)
    trainer = observe(TensorFlowRunner(mode="graph", api="trainer"), case)
    data = observe(ReferenceRunner(), case).steps[0].loss  # the data loss at the initial values
    penalty = sum(c / 2 * np.sum(init[name].astype(np.float64) ** 2) for name, c in case.optimizer.regularizers.items())
    assert penalty > 0.05
    assert trainer.steps[0].loss == pytest.approx(data + penalty, rel=1e-5)
    loop = observe(TensorFlowRunner(mode="graph"), case)
    assert [s.loss for s in trainer.steps] == pytest.approx([s.loss for s in loop.steps], rel=1e-6)


def test_trainer_optimizer_holds_the_model_trainable_variables():
    # fit hands the optimizer model.trainable_variables: the frozen layer is not among them, and the
    # optimizer built its slots (one momentum per variable) for exactly those
    case = SPEC["frozen-param-no-grad[momentum]"].case
    runner = TensorFlowRunner(mode="graph", api="trainer")
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    assert runner.optimizer_params() == ["b.weight", "b.bias"]
    runner.train_step(["a", "b"], *batch(case, 0, ["a", "b"]), True)
    momenta = [v for v in runner.opt.variables if "iteration" not in v.name and "learning_rate" not in v.name]
    assert len(momenta) == 2


def test_trainer_compiles_the_keras_loss_object():
    """A case's cross-entropy reaches compile as Keras' own loss object (ignore_class set), and fit on the
    integer labels trains as torch's CrossEntropyLoss(ignore_index=0)."""
    case = SPEC["ce-ignore-index-set[sgd]"].case
    runner = TensorFlowRunner(mode="graph", api="trainer")
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    runner.train_step(["a", "b"], *batch(case, 0, ["a", "b"]), True, loss=case.cross_entropy)
    (model,) = runner.trainers_.values()
    compiled = model.loss
    assert isinstance(compiled, keras.losses.SparseCategoricalCrossentropy)
    assert compiled.get_config()["ignore_class"] == 0 and compiled.get_config()["from_logits"]
    assert record("ce-ignore-index-set[sgd]", mode="graph", api="trainer").verdict == "conform"
