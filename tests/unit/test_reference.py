"""The NumPy oracle against hand-derived values and against finite differences."""
import numpy as np
import pytest

from conformance.oracle import reference as ref
from conformance.oracle.variants import semantics
from conformance.spec import Model, param_names


def test_sgd_coupled_l2():
    # p - lr * (g + wd * p) = 1 - 0.1 * (0.5 + 0.1 * 1) = 0.94
    assert ref.sgd(1.0, 0.5, lr=0.1, wd=0.1) == pytest.approx(0.94)


def test_momentum_first_buffer_is_gradient():
    # step 1: buf = g = 0.5, p = 1 - 0.1 * 0.5 = 0.95
    p, buf = ref.momentum(1.0, 0.5, None, lr=0.1, mu=0.9)
    assert (p, buf) == pytest.approx((0.95, 0.5))
    # step 2: buf = 0.9 * 0.5 + 0.5 = 0.95, p = 0.95 - 0.1 * 0.95 = 0.855
    p, buf = ref.momentum(p, 0.5, buf, lr=0.1, mu=0.9)
    assert (p, buf) == pytest.approx((0.855, 0.95))


def test_momentum_with_decay_folds_decay_into_buffer():
    # g' = 0.5 + 0.2 * 1 = 0.7; buf = 0.7; p = 1 - 0.1 * 0.7 = 0.93
    assert ref.momentum(1.0, 0.5, None, lr=0.1, mu=0.9, wd=0.2) == pytest.approx((0.93, 0.7))


def test_adam_first_step_is_lr_times_sign():
    # m = 0.1 g, v = 0.001 g^2; bias correction gives m_hat = g, v_hat = g^2,
    # so the step is lr * g / (|g| + eps) = 0.1 * 0.5 / (0.5 + 1e-8)
    p, m, v = ref.adam(1.0, 0.5, 0.0, 0.0, 1, lr=0.1, b1=0.9, b2=0.999, eps=1e-8)
    assert p == pytest.approx(1 - 0.1 * 0.5 / (0.5 + 1e-8), abs=1e-12)
    assert (m, v) == pytest.approx((0.05, 0.00025))


def test_adam_second_step_bias_correction():
    # g = 0.5 then -0.5: m = 0.9*0.05 - 0.05 = -0.005, v = 0.999*0.00025 + 0.00025 = 0.00049975
    # m_hat = -0.005 / 0.19 = -0.0263158, v_hat = 0.00049975 / 0.001999 = 0.25 -> sqrt = 0.5
    p, m, v = ref.adam(0.0, 0.5, 0.0, 0.0, 1, lr=0.1, b1=0.9, b2=0.999, eps=0.0)
    p, m, v = ref.adam(p, -0.5, m, v, 2, lr=0.1, b1=0.9, b2=0.999, eps=0.0)
    assert p == pytest.approx(-0.1 + 0.1 * 0.0263158 / 0.5, rel=1e-5)


def test_adam_coupled_vs_adamw_decoupled():
    # adam: g' = 0.5 + 0.1 * 1 = 0.6, first step = lr * sign = 0.1 -> 0.9 (decay lost in normalization)
    p_adam, _, _ = ref.adam(1.0, 0.5, 0.0, 0.0, 1, lr=0.1, b1=0.9, b2=0.999, eps=0.0, wd=0.1)
    # adamw: p * (1 - lr * wd) = 0.99, then - 0.1 -> 0.89
    p_adamw, _, _ = ref.adamw(1.0, 0.5, 0.0, 0.0, 1, lr=0.1, b1=0.9, b2=0.999, eps=0.0, wd=0.1)
    assert (p_adam, p_adamw) == pytest.approx((0.9, 0.89))


def test_clip_scale():
    # |[3, 4]| = 5 -> scale 1/5 to reach norm 1; already below -> 1
    assert ref.clip_scale([np.array([3.0]), np.array([4.0])], 1.0) == pytest.approx(0.2)
    assert ref.clip_scale([np.array([0.3, 0.4])], 1.0) == 1.0


def test_batchnorm_running_unbiased():
    # batch [1, 3]: mean 2, biased var 1, unbiased 2; momentum 0.1 from (0, 1): (0.2, 0.9 + 0.2)
    mean, var = ref.batchnorm_running(np.zeros(1), np.ones(1), np.array([[1.0], [3.0]]), 0.1)
    assert (mean[0], var[0]) == pytest.approx((0.2, 1.1))


def assert_backward_matches_finite_differences(layers, path, x, train, names, **model_fields):
    """The oracle's gradients of `names` equal central differences of its own loss."""
    model = Model.model_validate({"layers": layers, **model_fields})
    rng = np.random.default_rng(0)
    values = {}
    for name in param_names(model):
        layer, role = name.split(".")
        spec = model.layers[layer]
        shape = spec.weight_shape() if role == "weight" else (spec.out_features(),)
        values[name] = (1 + rng.random(shape)) if role == "running_var" else \
            (1 + 0.1 * rng.normal(size=shape)) if role == "weight" and spec.width else rng.normal(size=shape)
    t = rng.normal(size=(len(x), *model.shapes(path)[-1]))

    def loss_at(vals):
        runner = ref.ReferenceRunner()
        runner.build(model, vals)
        return runner.forward(path, x, t, train=train, backward=False)

    runner = ref.ReferenceRunner()
    runner.build(model, values)
    runner.forward(path, x, t, train=train, backward=True)
    grads = runner.grads()
    for name in names:
        numeric = np.zeros_like(values[name])
        for idx in np.ndindex(values[name].shape):
            plus = {k: v.copy() for k, v in values.items()}
            minus = {k: v.copy() for k, v in values.items()}
            plus[name][idx] += 1e-6
            minus[name][idx] -= 1e-6
            numeric[idx] = (loss_at(plus) - loss_at(minus)) / 2e-6
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-7, err_msg=name)
    return grads


@pytest.mark.parametrize("train", [True, False])
def test_batchnorm_backward_matches_finite_differences(train):
    layers = {"a": {"linear": [3, 4]}, "bn": {"batchnorm": 4}, "b": {"linear": [4, 2]}}
    x = np.random.default_rng(1).normal(size=(6, 3))
    grads = assert_backward_matches_finite_differences(
        layers, ["a", "bn", "b"], x, train, ["a.weight", "a.bias", "bn.weight", "bn.bias", "b.weight"])
    assert grads["bn.running_mean"] is None and grads["bn.running_var"] is None


def test_layernorm_backward_matches_finite_differences():
    layers = {"a": {"linear": [3, 5]}, "ln": {"layernorm": 5}, "b": {"linear": [5, 2]}}
    x = np.random.default_rng(1).normal(size=(6, 3))
    assert_backward_matches_finite_differences(layers, ["a", "ln", "b"], x, True,
                                               ["a.weight", "a.bias", "ln.weight", "ln.bias", "b.weight"])


@pytest.mark.parametrize("train", [True, False])
def test_conv2d_and_image_batchnorm_backward_match_finite_differences(train):
    layers = {"c": {"conv2d": [2, 3, 3]}, "bn": {"batchnorm": 3}, "d": {"conv2d": [3, 2, 1], "bias": False},
              "fc": {"linear": [18, 2]}}
    x = np.random.default_rng(1).normal(size=(4, 2, 3, 3))
    assert_backward_matches_finite_differences(
        layers, ["c", "bn", "d", "fc"], x, train, ["c.weight", "c.bias", "bn.weight", "bn.bias", "d.weight", "fc.weight"],
        image_size=3)


def test_conv2d_is_a_cross_correlation_with_same_padding():
    x = np.arange(9.0).reshape(1, 1, 3, 3)
    weight = np.zeros((1, 1, 3, 3))
    weight[0, 0, 0, 0] = 1.0  # picks the pixel up and left of each position (zero outside)
    y, _ = ref.conv2d(x, weight, np.array([0.5]), pad=1)
    assert y[0, 0].tolist() == [[0.5, 0.5, 0.5], [0.5, 0.5, 1.5], [0.5, 3.5, 4.5]]


def test_embedding_backward_matches_finite_differences_and_skips_the_padding_row():
    layers = {"e": {"embedding": [6, 3], "padding_idx": 2}, "b": {"linear": [3, 2]}}
    x = np.array([2, 0, 0, 5, 2])  # row 0 twice, rows 1, 3, 4 never, the padding row 2 twice
    grads = assert_backward_matches_finite_differences(layers, ["e", "b"], x, True, ["b.weight"])
    g = grads["e.weight"]
    assert not g[[1, 2, 3, 4]].any() and g[0].any() and g[5].any()


def test_detach_and_frozen_leave_no_gradient():
    model = Model.model_validate({"layers": {"a": {"linear": [2, 2]}, "b": {"linear": [2, 2]},
                                             "c": {"linear": [2, 1]}},
                                  "detach_after": ["a"], "frozen": ["c.bias"]})
    rng = np.random.default_rng(1)
    values = {n: rng.normal(size=s) for n, s in [("a.weight", (2, 2)), ("a.bias", 2), ("b.weight", (2, 2)),
                                                  ("b.bias", 2), ("c.weight", (2, 1)), ("c.bias", 1)]}
    runner = ref.ReferenceRunner()
    runner.build(model, values)
    runner.forward(["a", "b", "c"], rng.normal(size=(4, 2)), rng.normal(size=(4, 1)), True, True)
    grads = runner.grads()
    assert grads["a.weight"] is None and grads["a.bias"] is None and grads["c.bias"] is None
    assert np.any(grads["b.weight"]) and np.any(grads["c.weight"])


def test_each_decay_filter_sees_its_frameworks_names():
    """What a weight-decay name filter is handed, per decay-filter-* variant: the reference sees torch's
    named_parameters(); paddle's generated names count each layer class from 0 in build order."""
    model = Model.model_validate({"layers": {"a": {"linear": [4, 4]}, "LayerNorm": {"layernorm": 4},
                                            "bn": {"batchnorm": 4}, "b": {"linear": [4, 2]}}})
    expected = {
        (): ["a.weight", "LayerNorm.bias", "bn.running_var", "b.bias"],
        ("decay-filter-sees-gamma-beta",): ["a.weight", "LayerNorm.beta", "bn.moving_variance", "b.bias"],
        ("decay-filter-sees-weight-names-only",): ["kernel:0", "beta:0", "moving_variance:0", "bias:0"],
        ("decay-filter-sees-scoped-weight-names",): ["a/kernel:0", "LayerNorm/beta:0", "bn/moving_variance:0", "b/bias:0"],
        ("decay-filter-sees-flax-paths",): ["a/kernel", "LayerNorm/bias", "bn/var", "b/bias"],
        ("decay-fun-sees-generated-names",): ["linear_0.w_0", "layer_norm_0.b_0", "batch_norm1d_0.w_2", "linear_1.b_0"],
    }
    for variants, names in expected.items():
        runner = ref.ReferenceRunner(variants=variants)
        runner.build(model, {})
        runner.make_optimizer(ref.Optimizer(name="adamw"))
        assert [runner._filter_name(n) for n in ("a.weight", "LayerNorm.bias", "bn.running_var", "b.bias")] == names


@pytest.mark.parametrize("variants, parts, excluded", [
    ((), ["bias", "LayerNorm.weight"], {"a.bias", "LayerNorm.weight", "LayerNorm.bias"}),
    (("decay-filter-sees-gamma-beta",), ["bias", "LayerNorm.weight"], {"a.bias"}),
    (("decay-fun-sees-generated-names",), ["bias", "norm"], {"LayerNorm.weight", "LayerNorm.bias"}),
    (("decay-filter-sees-scoped-weight-names",), ["Layer.orm"], {"LayerNorm.weight", "LayerNorm.bias"}),  # a regex
    ((), ["Layer.orm"], set()),  # a substring
])
def test_no_decay_names_exclude_what_the_filter_matches(variants, parts, excluded):
    model = Model.model_validate({"layers": {"a": {"linear": [2, 2]}, "LayerNorm": {"layernorm": 2}}})
    runner = ref.ReferenceRunner(variants=variants)
    runner.build(model, {})
    runner.make_optimizer(ref.Optimizer(name="adamw", weight_decay=0.1, no_decay_names=parts))
    assert {n for n in param_names(model) if runner._decay(n) == (0.0, 0.0)} == excluded


@pytest.mark.parametrize("seed", range(5))
def test_a_default_draw_is_told_apart_from_another_scale_but_not_from_itself(seed):
    """`initial: reference` compares two random draws by their statistics: two draws of one default
    initialization agree, whatever the seeds; a draw at another scale (Glorot's against torch's), a
    constant against a draw, or another constant do not."""
    from conformance.engine.verdict import _same_draw
    layer = Model.model_validate({"layers": {"a": {"linear": [256, 64], "init": "default"}}}).layers["a"]
    draw = lambda variants, s, role="weight": ref.default_init(  # noqa: E731
        layer, role, (256, 64) if role == "weight" else (64,), semantics(variants), np.random.default_rng(s))
    assert _same_draw(draw((), seed), draw((), seed + 100))[0]
    assert _same_draw(draw(("linear-conv-init-lecun-normal",), seed), draw(("linear-conv-init-lecun-normal",), seed + 7))[0]
    assert not _same_draw(draw(("linear-init-xavier-uniform",), seed), draw((), seed + 100))[0]
    assert not _same_draw(draw(("linear-conv-init-lecun-normal",), seed), draw((), seed + 100))[0]
    assert not _same_draw(draw(("bias-init-zero",), seed, "bias"), draw((), seed, "bias"))[0]
    assert _same_draw(np.ones(4), np.ones(4))[0] and not _same_draw(np.zeros(4), np.ones(4))[0]


def test_init_default_draws_only_the_layers_that_ask_and_refuses_one_by_one_checks():
    model = Model.model_validate({"layers": {"a": {"linear": [4, 4], "init": "default"}, "b": {"linear": [4, 2]}}})
    values = {n: np.full(s, 0.5) for n, s in [("a.weight", (4, 4)), ("a.bias", (4,)), ("b.weight", (4, 2)), ("b.bias", (2,))]}
    runner = ref.ReferenceRunner()
    runner.build(model, values)
    got = runner.values()
    assert not np.all(got["a.weight"] == 0.5) and np.all(got["b.weight"] == 0.5)


# ---------------------------------------------------------------- cross-entropy (spec: a case's cross_entropy)
def _numeric_grad(f, z, h=1e-6):
    g = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        up, down = z.copy(), z.copy()
        up[i] += h
        down[i] -= h
        g[i] = (f(up) - f(down)) / (2 * h)
    return g


@pytest.mark.parametrize("settings", [{}, {"reduction": "sum"}, {"ignore_index": 1}, {"label_smoothing": 0.2},
                                      {"label_smoothing": 0.1, "ignore_index": 0, "reduction": "sum"}])
def test_cross_entropy_gradient_matches_finite_differences(settings):
    from conformance.spec import CrossEntropy
    loss = ref.resolve_loss(CrossEntropy(**settings))
    z = np.random.default_rng(0).normal(size=(5, 3))
    labels = np.array([0, 1, 2, 1, 1])
    value, grad = ref.cross_entropy(z, labels, loss)
    assert np.isfinite(value)
    assert np.allclose(grad, _numeric_grad(lambda s: ref.cross_entropy(s, labels, loss)[0], z), atol=1e-6)


def test_cross_entropy_is_torchs_on_known_numbers():
    """log-softmax of [0, ln 3] is [ln 1/4, ln 3/4]; the mean skips the ignored sample; smoothing s mixes s / classes in."""
    from conformance.spec import CrossEntropy
    z, labels = np.array([[0.0, np.log(3)], [5.0, 1.0]]), np.array([1, -100])
    value, grad = ref.cross_entropy(z, labels, ref.resolve_loss(CrossEntropy(ignore_index="default")))
    assert np.isclose(value, -np.log(0.75)) and np.allclose(grad, [[0.25, -0.25], [0, 0]])
    smoothed, _ = ref.cross_entropy(z[:1], labels[:1], ref.resolve_loss(CrossEntropy(label_smoothing=0.5)))
    assert np.isclose(smoothed, -(0.75 * np.log(0.75) + 0.25 * np.log(0.25)))


def test_an_all_ignored_batch_has_a_nan_mean_and_a_zero_gradient_and_a_zero_sum():
    from conformance.spec import CrossEntropy
    z, labels = np.ones((3, 4)), np.zeros(3, dtype=int)
    value, grad = ref.cross_entropy(z, labels, ref.resolve_loss(CrossEntropy(ignore_index=0)))
    assert np.isnan(value) and not grad.any()
    value, grad = ref.cross_entropy(z, labels, ref.resolve_loss(CrossEntropy(ignore_index=0, reduction="sum")))
    assert value == 0.0 and not grad.any()
    with pytest.raises(IndexError, match="Target -100 is out of bounds"):  # a label no one ignores
        ref.cross_entropy(z, labels - 100, ref.resolve_loss(CrossEntropy()))


def test_scores_read_as_probabilities_are_clipped_and_renormalised():
    """ce-default-takes-probabilities: -log(c_y / sum c), c the scores clipped to [1e-7, 1 - 1e-7]; no gradient
    reaches a clipped score."""
    from conformance.spec import CrossEntropy
    loss = ref.resolve_loss(CrossEntropy(from_logits="default"), semantics(["ce-default-takes-probabilities"]))
    assert loss.from_logits is False
    z, labels = np.array([[0.2, 0.6, -1.0]]), np.array([1])
    value, grad = ref.cross_entropy(z, labels, loss)
    assert np.isclose(value, -np.log(0.6 / (0.8 + 1e-7)))
    assert grad[0, 2] == 0 and np.allclose(grad[0, :2], _numeric_grad(lambda s: ref.cross_entropy(s, labels, loss)[0], z)[0, :2], atol=1e-5)


def test_a_bias_left_to_a_default_without_one_is_zero_and_never_trained():
    model = Model.model_validate({"layers": {"c": {"conv2d": [1, 2, 3], "bias": "default"}, "d": {"linear": [32, 2]}}})
    rng = np.random.default_rng(0)
    values = {n: rng.normal(size=s) for n, s in [("c.weight", (2, 1, 3, 3)), ("c.bias", (2,)), ("d.weight", (32, 2)),
                                                  ("d.bias", (2,))]}
    with_bias, without = ref.ReferenceRunner(), ref.ReferenceRunner(variants=["conv-default-no-bias"])
    for runner in (with_bias, without):
        runner.build(model, values)
        runner.make_optimizer(ref.Optimizer(name="sgd"))
        runner.forward(["c", "d"], rng.normal(size=(2, 1, 4, 4)), rng.normal(size=(2, 2)), True, True)
    assert with_bias.grads()["c.bias"] is not None and with_bias.defaults() == {"c.bias": True}
    assert without.grads()["c.bias"] is None and not without.values()["c.bias"].any()
    assert without.defaults() == {"c.bias": False}


def test_a_conv_padding_left_to_default_is_none_unless_its_variant_pads_same():
    model = Model.model_validate({"layers": {"c3": {"conv2d": [1, 1, 3], "padding": "default"},
                                            "c5": {"conv2d": [1, 1, 5], "padding": "default"}, "a": {"linear": [2, 2]}}})
    rng = np.random.default_rng(0)
    values = {"c3.weight": rng.normal(size=(1, 1, 3, 3)), "c3.bias": np.zeros(1), "c5.weight": rng.normal(size=(1, 1, 5, 5)),
              "c5.bias": np.zeros(1), "a.weight": np.eye(2), "a.bias": np.zeros(2)}
    for variants, expected in [((), {"c3.padding": 0, "c5.padding": 0}),
                               (["conv-default-pads-same"], {"c3.padding": 1, "c5.padding": 2})]:
        runner = ref.ReferenceRunner(variants=variants)
        runner.build(model, values)
        runner.make_optimizer(ref.Optimizer(name="sgd"))
        assert runner.defaults() == expected


def test_a_positional_dropout_rate_is_the_keep_probability_only_under_its_variant():
    model = Model.model_validate({"layers": {"a": {"linear": [2, 2]}, "drop": {"dropout": 0.1, "positional": True}}})
    for variants, rate in [((), 0.1), (["dropout-positional-is-keep-prob"], 0.9)]:
        runner = ref.ReferenceRunner(variants=variants)
        runner.build(model, {"a.weight": np.eye(2), "a.bias": np.zeros(2)})
        runner.make_optimizer(ref.Optimizer(name="sgd"))
        assert np.isclose(runner.defaults()["drop.rate"], rate)


@pytest.mark.parametrize("variants, settings, count", [
    (["ce-negative-ignore-mean-over-batch"], {"ignore_index": -1}, 4),   # the ignored sample counted
    (["ce-negative-ignore-mean-over-batch"], {"ignore_index": 0}, 3),    # a non-negative index: the kept ones
    (["ce-smoothing-drops-ignore-index"], {"ignore_index": 0, "label_smoothing": 0.1}, 4),
    (["ce-smoothing-drops-ignore-index", "ce-smoothing-mean-over-classes"], {"ignore_index": 0, "label_smoothing": 0.1}, 12),
])
def test_the_ce_variants_change_what_a_mean_divides_by(variants, settings, count):
    """Four samples of three classes, one labelled with the ignore index: the mean's divisor under each variant."""
    from conformance.spec import CrossEntropy
    z = np.random.default_rng(1).normal(size=(4, 3))
    ignored = settings["ignore_index"]
    labels = np.array([ignored, 1, 2, 1])
    loss = ref.resolve_loss(CrossEntropy(**settings))
    summed = ref.resolve_loss(CrossEntropy(**settings, reduction="sum"))
    total, _ = ref.cross_entropy(z, labels, summed, semantics(variants))  # the sum over the samples each keeps
    value, _ = ref.cross_entropy(z, labels, loss, semantics(variants))
    assert np.isclose(value, total / count)


def test_an_all_ignored_batch_under_the_zero_and_nan_variants():
    from conformance.spec import CrossEntropy
    z, labels = np.ones((2, 3)), np.zeros(2, dtype=int)
    loss = ref.resolve_loss(CrossEntropy(ignore_index=0))
    assert ref.cross_entropy(z, labels, loss, semantics(["ce-all-ignored-mean-zero"]))[0] == 0.0
    value, grad = ref.cross_entropy(z, labels, loss, semantics(["ce-all-ignored-nan-grad"]))
    assert np.isnan(value) and np.isnan(grad).all()


def test_a_default_that_ignores_no_label_raises_and_a_compiled_step_has_decayed_first():
    from conformance.spec import CrossEntropy
    model = Model.model_validate({"layers": {"a": {"linear": [2, 3]}}})
    runner = ref.ReferenceRunner(variants=["ce-default-ignores-no-label", "compiled-step-decays-before-raising"])
    runner.build(model, {"a.weight": np.ones((2, 3)), "a.bias": np.zeros(3)})
    runner.make_optimizer(ref.Optimizer(name="adamw", lr=0.1, weight_decay=0.5))
    with pytest.raises(IndexError, match="Target -100"):
        runner.forward(["a"], np.ones((2, 2)), np.array([-100, 1]), True, True, loss=CrossEntropy(ignore_index="default"))
    assert np.allclose(runner.values()["a.weight"], 0.95)  # lr * wd of decay, and no gradient step


def test_a_skipped_batchnorm_hands_its_weight_and_bias_zeros_that_decay_still_acts_on():
    """bn-one-value-skipped: the input passes through, and the weight and bias get a zero gradient, not none,
    so an optimizer's weight decay moves the weight (paddle's grad kernel zeroes d_scale and d_bias)."""
    model = Model.model_validate({"layers": {"a": {"linear": [2, 2]}, "bn": {"batchnorm": 2}}})
    runner = ref.ReferenceRunner(variants=("bn-one-value-skipped",))
    runner.build(model, {"a.weight": np.eye(2), "a.bias": np.zeros(2), "bn.weight": np.ones(2), "bn.bias": np.zeros(2),
                         "bn.running_mean": np.zeros(2), "bn.running_var": np.ones(2)})
    x = np.array([[1.0, 2.0]])
    runner.forward(["a", "bn"], x, np.array([[0.0, 0.0]]), True, True)
    grads = runner.grads()
    assert np.array_equal(grads["bn.weight"], np.zeros(2)) and np.array_equal(grads["bn.bias"], np.zeros(2))
    assert np.any(grads["a.weight"])  # the layer before it trains on the batch, through the identity
    runner.make_optimizer(ref.Optimizer(name="sgd", lr=0.1, weight_decay=0.5))
    runner.update()
    assert np.allclose(runner.values()["bn.weight"], 0.95)
