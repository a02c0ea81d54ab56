"""The layer-kinds table (conformance/spec/layers.py): one answer for every adapter and the oracle."""
import pytest

from conformance.spec import Model, SpecError, load_spec
from conformance.spec import layers as layer_kinds


def model(**layers):
    return Model(layers={name: spec for name, spec in layers.items()}, image_size=4)


def test_a_batchnorm_takes_images_after_a_conv_and_vectors_after_a_linear():
    m = model(conv={"conv2d": [1, 2, 3]}, bn={"batchnorm": 2}, drop={"dropout": 0.5}, bn2={"batchnorm": 2},
              fc={"linear": [32, 2]}, bn3={"batchnorm": 2})
    assert layer_kinds.image_batchnorms(m) == {"bn", "bn2"}
    assert layer_kinds.flatten_before(m, ["conv", "bn", "fc", "bn3"]) == {2}
    assert m.shapes(["conv", "bn", "fc", "bn3"]) == [(1, 4, 4), (2, 4, 4), (2, 4, 4), (2,), (2,)]


def test_a_tie_counts_as_the_layer_it_ties_to():
    m = model(conv={"conv2d": [2, 2, 3]}, fc={"linear": [2, 2]}, again={"tie": "conv"}, bn={"batchnorm": 2})
    assert layer_kinds.image_batchnorms(m) == {"bn"}


def test_roles_shapes_and_features_come_from_the_table():
    m = model(fc={"linear": [3, 2], "bias": False}, conv={"conv2d": [1, 4, 3]}, emb={"embedding": [5, 3]},
              bn={"batchnorm": 4}, ln={"layernorm": 3}, drop={"dropout": 0.1})
    roles = {n: layer.param_roles() for n, layer in m.layers.items()}
    assert roles == {"fc": ("weight",), "conv": ("weight", "bias"), "emb": ("weight",),
                     "bn": ("weight", "bias", "running_mean", "running_var"), "ln": ("weight", "bias"), "drop": ()}
    assert m.layers["conv"].weight_shape() == (4, 1, 3, 3) and m.layers["fc"].weight_shape() == (3, 2)
    assert m.shapes(["emb", "ln", "drop", "fc"]) == [(), (3,), (3,), (3,), (2,)]
    with pytest.raises(ValueError, match="layer 'emb' \\(embedding\\) cannot take a 3 input"):
        m.shapes(["emb", "emb"])


CASE = """
topic: batchnorm
cases:
  - id: bn-rank
    title: t
    references: [https://example.org]
    model:
      layers:
        fc: {linear: [3, 2]}
        conv: {conv2d: [1, 2, 3]}
        bn: {batchnorm: 2}
    optimizer: {name: sgd}
    steps: [{path: [fc, bn]}]
    expect: [{step: 0, grad: {bn.weight: nonzero}}]
"""


def test_the_spec_refuses_a_path_that_feeds_a_batchnorm_the_other_rank(tmp_path):
    (tmp_path / "bn.yaml").write_text(CASE)
    with pytest.raises(SpecError, match="batchnorm 'bn' takes vectors on a path, but the layer declared before it "
                                        "makes images"):
        load_spec(tmp_path)


def test_every_shipped_path_agrees_with_the_table():
    for inst in load_spec():
        images = layer_kinds.image_batchnorms(inst.case.model)
        for step in inst.case.steps:
            for name, shape in zip(step.path, inst.case.model.shapes(step.path)):
                if inst.case.model.spec(name).batchnorm:
                    assert (len(shape) == 3) == ((inst.case.model.layers[name].tie or name) in images), inst.id
