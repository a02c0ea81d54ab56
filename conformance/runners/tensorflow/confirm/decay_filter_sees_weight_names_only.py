"""decay-filter-sees-weight-names-only

Keras 2 (tf.keras up to TF 2.15): optimizer.exclude_from_weight_decay(var_names=[...]) matches each entry
as a regular expression (re.search) against variable.name, which for a layer built on its own carries no
scope: `kernel:0`, `bias:0`, `gamma:0`, `beta:0`. A part naming a layer never matches, and "bias" leaves a
normalisation layer's beta decayed. Layers built inside a model's first call are named in the model's and
the layer's scope instead (`net/a/kernel:0`, printed below). The reference is torch's named_parameters():
`<layer>.weight`, `<layer>.bias`.

Upstream: https://tensorflow.org/versions/r2.14/api_docs/python/tf/keras/optimizers/AdamW
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
tf.get_logger().setLevel("ERROR")  # TF 2.15: "Gradients do not exist for variables ..."
KERAS2 = keras.__version__.startswith("2.")  # TF <= 2.15 ships Keras 2, whose weights are tf.Variables
Variable = tf.Variable if KERAS2 else keras.Variable  # Keras 2 has no keras.Variable




def tf_name(v):
    return v.name if KERAS2 else v.value.name  # Keras 3: the backing tf.Variable, which the optimizer matches


def layers_built_on_their_own():
    a, norm = keras.layers.Dense(4, name="a"), keras.layers.LayerNormalization(name="LayerNorm")
    a.build((None, 3))
    norm.build((None, 4))
    return a.trainable_variables + norm.trainable_variables


def decayed(variables, var_names):
    """Which variables one decay-only AdamW step (zero gradients, lr 0.1, weight_decay 0.5) moves."""
    for v in variables:
        v.assign(tf.ones_like(v))
    opt = keras.optimizers.AdamW(learning_rate=0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=var_names)
    opt.apply_gradients([(tf.zeros_like(v), v) for v in variables])
    return {tf_name(v): bool(np.asarray(v).flat[0] < 1.0) for v in variables}


def test_filter_sees_the_bare_weight_name():
    variables = layers_built_on_their_own()
    print("TF variable names:", [tf_name(v) for v in variables])
    assert [tf_name(v) for v in variables] == ["kernel:0", "bias:0", "gamma:0", "beta:0"]
    by_layer = decayed(layers_built_on_their_own(), ["LayerNorm"])
    torch_recipe = decayed(layers_built_on_their_own(), ["bias", "LayerNorm.weight"])
    print("exclude ['LayerNorm']:", by_layer, "| exclude ['bias', 'LayerNorm.weight']:", torch_recipe)
    assert by_layer == {"kernel:0": True, "bias:0": True, "gamma:0": True, "beta:0": True}  # a layer's name: no match
    assert torch_recipe == {"kernel:0": True, "bias:0": False, "gamma:0": True, "beta:0": True}


class Net(keras.Model):
    def __init__(self):
        super().__init__()
        self.a, self.LayerNorm = keras.layers.Dense(4, name="a"), keras.layers.LayerNormalization(name="LayerNorm")

    def call(self, x):
        return self.LayerNorm(self.a(x))


if __name__ == "__main__":
    print("tensorflow", tf.__version__, "keras", keras.__version__)
    test_filter_sees_the_bare_weight_name()
    net = Net()
    net(tf.zeros([2, 3]))  # built lazily, in the model's first call
    print("built inside the model's first call instead:", [tf_name(v) for v in net.trainable_variables])
    print("confirmed: decay-filter-sees-weight-names-only")
