"""What only --mode graph (backend label jit) needs: the step's two functions compiled with nnx.jit,
as the flax guides write `@nnx.jit def train_step(model, optimizer, x, y)`. The engine reads the
gradients between backward and update, so the step is the two halves a fused train_step is made of:
the gradient function (nnx.value_and_grad of the loss, one per step path, traced once per path and
train/eval mode: the mode is a static attribute of the modules, so a switch recompiles) and the
update (optimizer.update(model, grads)). nnx.jit carries the modules' state in and out (BatchNorm
statistics, the optimizer's state), as the fused step does.
"""
from __future__ import annotations

from flax import nnx


def compiled(fn):
    """`fn(model, ...)` compiled as nnx.jit compiles a user's train_step."""
    return nnx.jit(fn)


def compiled_update(optimizer):
    @nnx.jit
    def update(optimizer, model, grads):
        optimizer.update(model, grads)
    return lambda model, grads: update(optimizer, model, grads)
