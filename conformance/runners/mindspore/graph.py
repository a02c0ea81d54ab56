"""What only --mode graph (backend label GRAPH_MODE) needs: a folder for the IR files of refused compiles,
and the compiled update.

The graph run is the same user code as the PyNative run (runner.py), under
ms.set_context(mode=ms.GRAPH_MODE), as the seed-3 report does. There value_and_grad returns a @jit
function: forward and backward are one graph, compiled at its first call and reused after (one per step
path, as grad_fn is made once per path). The update is a @ms.jit function (clipping, then
optimizer(grads)). The tutorials fuse the two into one `@ms.jit train_step`; the split hands the engine
the gradient tuple between them, the same tuple the compiled value_and_grad hands a fused step, and the
optimizer graph runs on it unchanged (a test checks the split against a fused train_step, bit for bit).
An eval forward calls the model Cell, as the tutorials' test loop does (a Cell compiles once per
train/predict phase). What MindSpore refuses to compile is the case's error with MindSpore's message:
the adapter wrote the user's code, and the refusal is what that user meets (not an Unsupported of the
adapter).
"""
from __future__ import annotations

import os
import tempfile

import mindspore as ms


def keep_ir_out_of_cwd():
    # a refused compile writes rank_0/om/analyze_fail.ir under MS_OM_PATH, by default the cwd
    os.environ.setdefault("MS_OM_PATH", tempfile.mkdtemp(prefix="mindspore-om-"))


def compiled_update(apply):
    """`apply(grads)` compiled as the tutorials' @ms.jit train_step compiles it, once per case, with
    this case's optimizer (MindSpore warns that "apply" is compiled again: it is a new one)."""
    jitted = ms.jit(apply)

    def update(grads):
        # a tuple of Tensors passed to a @jit function is a compile-time constant unless marked mutable
        # (MindSpore warns so and recompiles for every new value); the optimizer Cell itself needs no mark
        return jitted(ms.mutable(grads))
    return update
