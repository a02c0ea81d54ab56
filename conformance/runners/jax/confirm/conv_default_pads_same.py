"""conv-default-pads-same

flax nnx: nnx.Conv(in_features, out_features, kernel_size, strides=1, *, padding='SAME', ...): built without
padding it pads 'SAME', so at stride 1 the image keeps its size, where torch's Conv2d (padding=0) shrinks it by the
kernel less one. The reference semantics pad nothing.

Upstream: https://flax.readthedocs.io/en/latest/api_reference/flax.nnx/nn/linear.html
"""
import jax.numpy as jnp
from flax import nnx


def test_conv_without_padding_keeps_the_image_size():
    image = jnp.ones((1, 8, 8, 1))  # NHWC, flax's layout
    for k in (3, 5):
        side = nnx.Conv(1, 2, (k, k), rngs=nnx.Rngs(0))(image).shape[1]  # padding left out
        print(f"nnx.Conv(1, 2, ({k}, {k})) on an 8 x 8 image: {side} x {side}; torch's Conv2d(1, 2, {k}) gives "
              f"{8 - k + 1} x {8 - k + 1}")
        assert side == 8
    assert nnx.Conv(1, 2, (3, 3), padding="VALID", rngs=nnx.Rngs(0))(image).shape[1] == 6  # torch's size


if __name__ == "__main__":
    import flax
    print("flax", flax.__version__)
    test_conv_without_padding_keeps_the_image_size()
    print("confirmed: conv-default-pads-same")
