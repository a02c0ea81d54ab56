"""What only --mode graph (backend label GRAPH_MODE) needs: MS_OM_PATH kept out of the cwd, and the
update compiled with @ms.jit. runner.py's docstring says how a graph run compiles and why so.
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
