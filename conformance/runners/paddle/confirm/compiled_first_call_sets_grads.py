"""compiled-first-call-sets-grads

paddle.jit.to_static (SOT, full_graph=False, and AST, full_graph=True): the first call of a converted
Layer, the one that builds its program, writes the gradients of the parameters it reaches instead of
adding to the gradients they already hold, so gradients accumulated before it are lost; later calls of
the same Layer accumulate.
In the reference semantics every backward pass adds to the gradient a parameter already holds.

Upstream: no upstream page states it.
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle.jit.sot.utils import min_graph_size_guard  # noqa: E402


class Scaled(paddle.nn.Layer):
    """One step path of a model: a shared Linear times a constant (two paths share the Linear)."""

    def __init__(self, layer, k):
        super().__init__()
        self.layer, self.k = layer, k

    def forward(self, x):
        return self.layer(x) * self.k


def accumulate(full_graph, warm):
    """Two backward passes with no clear in between: `first` (compiled), then `second`, compiled at
    that call, or (warm) compiled before by a forward-only call. Returns the Linear's weight gradient and
    the two passes' own gradients, computed one at a time in dygraph."""
    paddle.seed(0)
    lin = paddle.nn.Linear(4, 2)
    first = paddle.jit.to_static(Scaled(lin, 1.0), full_graph=full_graph)
    second = paddle.jit.to_static(Scaled(lin, 2.0), full_graph=full_graph)
    x1, x2 = paddle.randn([5, 4]), paddle.randn([5, 4])
    with min_graph_size_guard(0):  # SOT runs graphs under 10 ops as dygraph; 0 compiles this tiny one
        if warm:
            second(x1)  # its program is built by a forward-only call
        first(x1).sum().backward()
        y = second(x2)
        # the compiled program's grad node: Dy2StGradNode (Paddle 3), unnamed GradNodeBase (2.6)
        assert y.grad_fn.name() in ("Dy2StGradNode", "GradNodeBase"), "the compiled program ran"
        y.sum().backward()  # no clear in between: the gradients should add up
    got = lin.weight.grad.numpy().copy()
    own = []
    for k, x in ((1.0, x1), (2.0, x2)):  # the same two passes in plain dygraph, one at a time
        for p in lin.parameters():
            p.clear_gradient(False)
        (lin(x) * k).sum().backward()
        own.append(lin.weight.grad.numpy().copy())
    return got, own[0], own[1]


def check_first_call_sets(full_graph):
    got, g1, g2 = accumulate(full_graph, warm=False)
    summed, replaced = np.allclose(got, g1 + g2, atol=1e-5), np.allclose(got, g2, atol=1e-5)
    print(f"to_static(full_graph={full_graph}): gradient after `first` then the first call of `second`: "
          f"the sum of both passes (the reference): {summed}, `second`'s own only: {replaced} "
          f"(|first pass's gradient| {np.abs(g1).max():.3f} lost)")
    assert np.abs(g1).max() > 0.1  # the first pass's gradient is not negligible
    assert replaced and not summed


def test_sot_first_call_sets_grads():
    check_first_call_sets(False)


def test_ast_first_call_sets_grads():
    check_first_call_sets(True)


def test_later_calls_accumulate():
    """`second` built by a forward-only call before: its backward adds to what `first` left."""
    summed = {}
    for full_graph in (False, True):
        got, g1, g2 = accumulate(full_graph, warm=True)
        summed[full_graph] = np.allclose(got, g1 + g2, atol=1e-5)
    print("`second` compiled by an earlier forward-only call: the gradient is the sum of both passes: " + ", ".join(
        f"to_static(full_graph={full_graph}): {ok}" for full_graph, ok in summed.items()))
    assert all(summed.values())


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_sot_first_call_sets_grads()
    test_ast_first_call_sets_grads()
    test_later_calls_accumulate()
    print("confirmed: compiled-first-call-sets-grads")
