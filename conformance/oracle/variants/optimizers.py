"""Optimizer numerics: momentum and Adam as a framework writes them."""
from __future__ import annotations

from . import variant

DECLARED = [
    variant(
        "momentum-velocity-scaled-by-lr",
        "SGD with momentum keeps a velocity already scaled by the learning rate (v = momentum * v - lr * g; "
        "w += v): a learning-rate change applies to gradients from then on, the velocity keeps the old rate's steps",
        "the momentum buffer accumulates raw gradients (buf = momentum * buf + g; w -= lr * buf): a new "
        "learning rate scales the whole buffer at once",
        momentum_velocity_scaled_by_lr=True),
    variant(
        "adam-epsilon-hat",
        "Adam adds epsilon to sqrt(v) before the bias correction ('epsilon hat'): the effective epsilon is "
        "eps * sqrt(1 - beta2^t)",
        "Adam adds epsilon to sqrt(v_hat), after the bias correction",
        adam_epsilon_hat=True),
    variant(
        "adamw-no-bias-correction",
        "AdamW has no bias correction: w -= lr * (m / (sqrt(v) + eps) + wd * w)",
        "AdamW corrects the moments' bias by 1 - beta^t",
        adamw_bias_correction=False),
    variant(
        "adam-squares-each-lookup",
        "Adam and AdamW handed an embedding's sparse gradient square each lookup's slice before summing a "
        "row's duplicates: a row looked up k times in a batch adds the sum of the k squares to its second "
        "moment, not the square of its summed gradient",
        "Adam's second moment adds the square of each parameter's (dense, summed) gradient",
        adam_squares_each_lookup=True),
    variant(
        "adam-shared-step-counter",
        "Adam's bias correction counts the optimizer's steps, not the parameter's: a parameter that "
        "skipped a step resumes with a larger t",
        "each parameter's bias correction counts the steps that updated it",
        adam_shared_step_counter=True),
]
