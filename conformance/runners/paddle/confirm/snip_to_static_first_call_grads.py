"""Paddle 3, paddle.jit.to_static: the first call of a converted Layer (the call that builds its
program) writes the gradients of the parameters it reaches instead of adding to what they already hold.
A later call of the same converted Layer accumulates as dygraph does; so does a first call that ran
forward only before. Both SOT (full_graph=False, the default) and AST (full_graph=True) do it.
Found by: accumulate-across-unused under --mode graph --backend to_static (step 1's path [b] is first
compiled while b.weight holds step 0's gradient). No Paddle page or issue found that states it."""
import warnings; warnings.filterwarnings("ignore")
import numpy as np, paddle
from paddle.jit.sot.utils import min_graph_size_guard

print("paddle", paddle.__version__)


class Scaled(paddle.nn.Layer):
    def __init__(self, layer, k):
        super().__init__()
        self.layer, self.k = layer, k

    def forward(self, x):
        return self.layer(x) * self.k


def accumulate(full_graph, warm):
    paddle.seed(0)
    lin = paddle.nn.Linear(4, 2)
    first = paddle.jit.to_static(Scaled(lin, 1.0), full_graph=full_graph)
    second = paddle.jit.to_static(Scaled(lin, 2.0), full_graph=full_graph)
    x1, x2 = paddle.randn([5, 4]), paddle.randn([5, 4])
    # SOT runs graphs under 10 ops as dygraph; 0 makes it compile this tiny one
    with min_graph_size_guard(0):
        if warm:
            second(x1)  # its program is built by a forward-only call
        first(x1).sum().backward()
        y = second(x2)
        # the compiled program's grad node: Dy2StGradNode (Paddle 3), unnamed GradNodeBase (2.6)
        assert y.grad_fn.name() in ("Dy2StGradNode", "GradNodeBase"), "the compiled program ran"
        y.sum().backward()  # no clear in between: the gradients should add up
    got = lin.weight.grad.numpy().copy()
    expected = []
    for k, x in ((1.0, x1), (2.0, x2)):  # the same two passes in plain dygraph, one at a time
        [p.clear_gradient(False) for p in lin.parameters()]
        (lin(x) * k).sum().backward()
        expected.append(lin.weight.grad.numpy().copy())
    return got, expected


# full_graph=True (AST) crashes Paddle 2.6.2 on this script (SIGSEGV); run it on Paddle 3 only
for full_graph in (False, True) if paddle.__version__ >= "3" else (False,):
    got, (g1, g2) = accumulate(full_graph, warm=False)
    summed, replaced = np.allclose(got, g1 + g2, atol=1e-5), np.allclose(got, g2, atol=1e-5)
    print(f"full_graph={full_graph}: first call of `second` -> sum of both passes: {summed}, its own only: {replaced}")
    assert replaced and not summed
    got, (g1, g2) = accumulate(full_graph, warm=True)
    print(f"full_graph={full_graph}, `second` built by a forward-only call before -> sum: {np.allclose(got, g1 + g2, atol=1e-5)}")
    assert np.allclose(got, g1 + g2, atol=1e-5)
print("CONFIRMED: a to_static Layer's first call replaces the gradient a parameter holds instead of adding to it")
