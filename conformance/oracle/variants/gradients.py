"""What a backward pass leaves in the gradients, and what clearing them does."""
from __future__ import annotations

from . import COMPILED, variant

DECLARED = [
    variant(
        "clear-default-zero-fills",
        "the default gradient-clearing call fills existing gradients with zeros, so a parameter left out "
        "of the next step keeps a zero gradient and is still decayed and moved by momentum / Adam state",
        "the default clearing sets gradients to None: a parameter left out of a step is not updated at all",
        default_clear="zeros"),
    variant(
        "functional-zero-filled-grads",
        "each backward returns one gradient per optimizer parameter and zeros where none flows (a layer "
        "left out of the step, never used, behind stop_gradient or frozen, statistics): the optimizer "
        "decays and moves all of them; parameters outside the optimizer get no gradient",
        "a parameter that no gradient reaches has none, and the optimizer skips it",
        every_optimizer_param_gets_grad=True),
    variant(
        "nonscalar-backward-sums",
        "a backward pass (or gradient call) on a loss left per sample, a vector, differentiates its sum: no "
        "error, and every gradient is batch-size times the mean loss's",
        "backward on a non-scalar loss raises (a gradient is only implicit for a scalar): the step is refused",
        nonscalar_backward_sums=True),
    variant(
        "zeros-clear-fills-never-used",
        "clearing to zeros gives every optimizer parameter a zero gradient at the next backward, one "
        "that was never used included",
        "clearing to zeros zero-fills gradients that exist; a never-used parameter keeps None",
        zeros_clear_reaches_never_used=True),
    variant(
        "compiled-first-call-sets-grads",
        "the first call of a compiled step path (the call that builds its program) sets the gradients of "
        "the parameters it reaches instead of adding to the ones they hold: gradients accumulated before "
        "it are lost; later calls of the same path accumulate",
        "every backward pass adds to the gradient a parameter already holds",
        compiled_first_call_sets_grads=True, holds_only=COMPILED),
    variant(
        "clear-skips-frozen",
        "clearing gradients skips frozen parameters: one frozen after a backward keeps its last gradient",
        "clearing gradients clears every parameter's gradient, frozen or not",
        clear_skips_frozen=True),
]
