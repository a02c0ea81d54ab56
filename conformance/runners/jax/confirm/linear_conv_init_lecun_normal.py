"""linear-conv-init-lecun-normal

flax nnx: Linear and Conv built without kernel_init draw their kernel with lecun_normal, a normal
truncated at two standard deviations and scaled to standard deviation 1/sqrt(fan_in)
(flax/nnx/nn/linear.py: default_kernel_init = initializers.lecun_normal()). For Linear(256, 64): 0.0625;
torch's nn.Linear(256, 64) draws U(-1/16, 1/16), standard deviation 0.036.

Upstream: no upstream page states it (flax's source sets default_kernel_init = initializers.lecun_normal(); jax's lecun_normal page defines the draw)
"""
import numpy as np
from flax import nnx


def stats(w):
    """(std, max |w| / std): about 1.73 for a uniform draw, past 3 for a normal one of this size."""
    w = np.asarray(w, dtype=np.float64)
    return w.std(), np.abs(w).max() / w.std()


def test_kernels_are_lecun_normal():
    linear, conv = nnx.Linear(256, 64, rngs=nnx.Rngs(0)), nnx.Conv(16, 8, (3, 3), rngs=nnx.Rngs(0))
    for what, kernel, fan_in in (("Linear(256, 64)", linear.kernel, 256), ("Conv(16, 8, 3x3)", conv.kernel, 144)):
        std, spread = stats(kernel.get_value())
        print(f"{what}: kernel std {std:.4f} (lecun {1 / np.sqrt(fan_in):.4f}), max/std {spread:.2f}")
        assert abs(std * np.sqrt(fan_in) - 1) < 0.1 and spread < 2.3  # truncated at 2 of the cut normal


if __name__ == "__main__":
    import flax
    print("flax", flax.__version__)
    test_kernels_are_lecun_normal()
    print("confirmed: linear-conv-init-lecun-normal")
