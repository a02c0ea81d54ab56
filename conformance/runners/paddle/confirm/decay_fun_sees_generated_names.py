"""decay-fun-sees-generated-names

paddle.optimizer.AdamW(apply_decay_param_fun=fn) calls fn with each parameter's Tensor.name, the name Paddle
generates when the layer is built: `<layer class in snake case>_<n>.w_0` for a weight, `.b_0` for a bias
(linear_0.w_0, layer_norm_0.b_0, batch_norm1d_0.w_0), never the attribute path that named_parameters()
gives. A filter on "bias" or on a layer's name matches nothing, and one on "norm" matches every LayerNorm
and BatchNorm parameter. The reference is torch's named_parameters(): `<layer>.weight`, `<layer>.bias`.

Upstream: https://paddlepaddle.org.cn/documentation/docs/en/api/paddle/nn/Layer_en.html (the generated names),
https://paddlepaddle.org.cn/documentation/docs/en/api/paddle/optimizer/AdamW_en.html (the filter gets Tensor.name)
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402


class Net(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.a, self.ln, self.bn = paddle.nn.Linear(3, 4), paddle.nn.LayerNorm(4), paddle.nn.BatchNorm1D(4)

    def forward(self, x):
        return self.bn(self.ln(self.a(x)))


def test_apply_decay_param_fun_sees_generated_names():
    with paddle.utils.unique_name.guard():  # a fresh process's counters
        net = Net()
    print("named_parameters -> Tensor.name:", [(n, p.name) for n, p in net.named_parameters()])
    seen = []

    def fn(name):  # the user's filter, written for named_parameters() names
        seen.append(name)
        return "bias" not in name and "ln" not in name
    for p in net.parameters():
        p.set_value(np.ones(p.shape, np.float32))
    opt = paddle.optimizer.AdamW(learning_rate=0.1, weight_decay=0.5, parameters=net.parameters(),
                                 apply_decay_param_fun=fn)
    net(paddle.ones([2, 3])).sum().backward()
    for p in net.parameters():
        if p.grad is not None:
            p.grad.set_value(np.zeros(p.shape, np.float32))  # only the decay moves a value
    opt.step()
    print("apply_decay_param_fun was called with:", seen)
    assert set(seen) == {"linear_0.w_0", "linear_0.b_0", "layer_norm_0.w_0", "layer_norm_0.b_0",
                         "batch_norm1d_0.w_0", "batch_norm1d_0.b_0"}
    after = {n: float(p.numpy().flat[0]) for n, p in net.named_parameters() if not p.stop_gradient}
    print("after one decay-only step (0.95 = decayed):", after)
    assert all(np.isclose(v, 0.95) for v in after.values())  # "bias" and "ln" excluded nothing


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_apply_decay_param_fun_sees_generated_names()
    print("confirmed: decay-fun-sees-generated-names")
