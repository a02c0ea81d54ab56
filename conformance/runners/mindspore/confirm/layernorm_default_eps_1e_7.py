"""layernorm-default-eps-1e-7

MindSpore: nn.LayerNorm(normalized_shape) built without epsilon adds 1e-7 to the variance (2.10.0 still
builds with it, though the page announces 1e-5 for a later signature). The reference semantics' default
is 1e-5 (torch); nn.BatchNorm1d's default eps is 1e-5 already.

Upstream: https://www.mindspore.cn/docs/zh-CN/r2.10.0/api_python/nn/mindspore.nn.LayerNorm.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402


def test_layernorm_without_epsilon_adds_1e_7():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ln = nn.LayerNorm((3,))  # epsilon left out
    x = np.array([[1.0, 1.001, 1.002]], np.float32)  # variance 6.7e-7: the epsilon shows
    y = ln(ms.Tensor(x)).asnumpy()
    x = x.astype(np.float64)
    want = {eps: (x - x.mean()) / np.sqrt(x.var() + eps) for eps in (1e-7, 1e-5)}
    print(f"LayerNorm epsilon attribute {ln.epsilon}; output {y[0]}, eps 1e-7 predicts {want[1e-7][0]}, "
          f"eps 1e-5 (reference) predicts {want[1e-5][0]}; BatchNorm1d's default eps {nn.BatchNorm1d(3).eps}")
    assert np.allclose(y, want[1e-7], atol=2e-3)
    assert not np.allclose(y, want[1e-5], atol=2e-3)


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_layernorm_without_epsilon_adds_1e_7()
    print("confirmed: layernorm-default-eps-1e-7")
