"""bias-init-zero

flax nnx: Linear and Conv built without bias_init start their bias at zero (flax/nnx/nn/linear.py:
default_bias_init = initializers.zeros_init()); torch's nn.Linear and nn.Conv2d draw it from
U(-1/sqrt(fan_in), 1/sqrt(fan_in)).

Upstream: no upstream page states it for nnx (flax's source sets default_bias_init = initializers.zeros_init())
"""
import numpy as np
from flax import nnx


def test_biases_start_at_zero():
    linear, conv = nnx.Linear(256, 64, rngs=nnx.Rngs(0)), nnx.Conv(16, 8, (3, 3), rngs=nnx.Rngs(0))
    print("Linear bias max |b|", float(np.abs(linear.bias.get_value()).max()), "| Conv bias max |b|", float(np.abs(conv.bias.get_value()).max()))
    assert not np.any(np.asarray(linear.bias.get_value())) and not np.any(np.asarray(conv.bias.get_value()))


if __name__ == "__main__":
    import flax
    print("flax", flax.__version__)
    test_biases_start_at_zero()
    print("confirmed: bias-init-zero")
