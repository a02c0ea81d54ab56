"""paddle.jit.to_static: a converted Layer keeps the stop_gradient flags its parameters had when it was
first called (when its program was built). A layer unfrozen afterwards still gets no gradient and
does not train; in dygraph it does."""
import warnings

import numpy as np

warnings.simplefilter("ignore")
import paddle  # noqa: E402
from paddle.jit.sot.utils import min_graph_size_guard, strict_mode_guard  # noqa: E402

print("paddle", paddle.__version__)
x = paddle.to_tensor(np.random.default_rng(0).standard_normal((8, 4)).astype("float32"))


def grad_norm(t):
    return None if t.grad is None else float(np.abs(t.grad.numpy()).max())


def after_unfreeze(compiled, *, unfreeze_first_layer_only_weight=False):
    paddle.seed(0)
    a, b = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 2)
    net = paddle.nn.Sequential(a, b)
    frozen = [a.weight] if unfreeze_first_layer_only_weight else [a.weight, a.bias]
    for p in frozen:
        p.stop_gradient = True
    run = paddle.jit.to_static(net, full_graph=False) if compiled else net
    with min_graph_size_guard(0), strict_mode_guard(True):  # compile even this small graph
        run(x).pow(2).mean().backward()  # first call: builds the program
        for p in net.parameters():
            p.clear_gradient(set_to_zero=False)
        for p in frozen:
            p.stop_gradient = False  # unfreeze
        run(x).pow(2).mean().backward()
    return grad_norm(a.weight)


for compiled in (False, True):
    print(f"{'to_static' if compiled else 'dygraph  '}: max |a.weight.grad| after unfreezing layer a: "
          f"{after_unfreeze(compiled)}; after unfreezing a.weight only (a.bias trainable throughout): "
          f"{after_unfreeze(compiled, unfreeze_first_layer_only_weight=True)}")
