"""Default initialization: how a layer built without initializers draws its parameters (the reference is
torch's constructors, oracle.reference.REFERENCE_INIT). An entry is (family, scale(fan_in, fan_out)): the bound
of a uniform draw, the standard deviation of a normal or truncated-normal one, a constant's value."""
from __future__ import annotations

import numpy as np

from . import variant

XAVIER_BOUND = lambda fi, fo: np.sqrt(6 / (fi + fo))  # noqa: E731  U(+-bound): Glorot / Xavier uniform


DECLARED = [
    variant(
        "bias-init-zero",
        "Linear and Conv biases start at zero",
        "a Linear or Conv bias starts from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as its weight's bound",
        init={(kind, "bias"): ("constant", lambda fi, fo: 0.0) for kind in ("linear", "conv2d")}),
    variant(
        "linear-init-xavier-uniform",
        "a Linear weight starts from U(-b, b) with b = sqrt(6 / (fan_in + fan_out)) (Glorot / Xavier uniform): "
        "for a layer much wider than it is deep, about twice the reference's scale",
        "a Linear weight starts from kaiming_uniform(a=sqrt(5)), U(-1/sqrt(fan_in), 1/sqrt(fan_in))",
        init={("linear", "weight"): ("uniform", XAVIER_BOUND)}),
    variant(
        "conv-init-xavier-uniform",
        "a Conv weight starts from U(-b, b) with b = sqrt(6 / (fan_in + fan_out)), fans counting the kernel's "
        "receptive field (Glorot / Xavier uniform)",
        "a Conv weight starts from kaiming_uniform(a=sqrt(5)), U(-1/sqrt(fan_in), 1/sqrt(fan_in))",
        init={("conv2d", "weight"): ("uniform", XAVIER_BOUND)}),
    variant(
        "conv-init-he-normal",
        "a Conv weight starts from N(0, sqrt(2 / fan_in)), fan_in = in channels x kernel area (He / Kaiming "
        "normal): about 2.4 times the reference's scale",
        "a Conv weight starts from kaiming_uniform(a=sqrt(5)), U(-1/sqrt(fan_in), 1/sqrt(fan_in))",
        init={("conv2d", "weight"): ("normal", lambda fi, fo: np.sqrt(2 / fi))}),
    variant(
        "linear-conv-init-lecun-normal",
        "Linear and Conv weights start from a truncated normal with standard deviation 1/sqrt(fan_in) (LeCun "
        "normal): about 1.7 times the reference's scale",
        "Linear and Conv weights start from kaiming_uniform(a=sqrt(5)), standard deviation 1/sqrt(3 fan_in)",
        init={(kind, "weight"): ("truncated_normal", lambda fi, fo: 1 / np.sqrt(fi)) for kind in ("linear", "conv2d")}),
    variant(
        "embedding-init-xavier-uniform",
        "an Embedding table starts from U(-b, b) with b = sqrt(6 / (rows + dim)) (Xavier uniform): tiny next "
        "to the reference's unit scale",
        "an Embedding table starts from N(0, 1)",
        init={("embedding", "weight"): ("uniform", XAVIER_BOUND)}),
    variant(
        "embedding-init-uniform-0.05",
        "an Embedding table starts from U(-0.05, 0.05)",
        "an Embedding table starts from N(0, 1)",
        init={("embedding", "weight"): ("uniform", lambda rows, dim: 0.05)}),
    variant(
        "embedding-init-normal-0.01",
        "an Embedding table starts from N(0, 0.01)",
        "an Embedding table starts from N(0, 1)",
        init={("embedding", "weight"): ("normal", lambda rows, dim: 0.01)}),
    variant(
        "embedding-init-normal-fan-in",
        "an Embedding table starts from N(0, 1/sqrt(dim))",
        "an Embedding table starts from N(0, 1)",
        init={("embedding", "weight"): ("normal", lambda rows, dim: 1 / np.sqrt(dim))}),
]
