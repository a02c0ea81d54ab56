"""dropout-positional-is-keep-prob

MindSpore: nn.Dropout(keep_prob=0.5, p=None, dtype=mstype.float32): the first positional parameter is
keep_prob, the probability to KEEP (p, the probability to zero, is the second). nn.Dropout(0.1), as code
ported from torch writes it, zeroes 90 % of its inputs in train mode and scales the kept ones by
1 / 0.1 = 10 (torch's nn.Dropout(0.1) zeroes 10 % and scales by 1 / 0.9). nn.Dropout(0.5) is the same
either way. The reference semantics read the first argument as the rate to zero.

Upstream: https://www.mindspore.cn/docs/zh-CN/r2.10.0/api_python/nn/mindspore.nn.Dropout.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn, ops  # noqa: E402

PROBE = 100_000


def test_positional_dropout_rate_is_keep_prob():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    drop = nn.Dropout(0.1)  # the rate written positionally, as in torch
    drop.set_train(True)
    y = drop(ops.ones(PROBE, ms.float32)).asnumpy()
    zeroed = float((y == 0).mean())
    kept = np.unique(y[y != 0])
    print(f"nn.Dropout(0.1) in train mode zeroes {zeroed:.4f} of {PROBE} ones (torch's Dropout(0.1): 0.1) "
          f"and scales the rest to {kept} (torch: {1 / 0.9:.4f}); keep_prob attribute {getattr(drop, 'keep_prob', None)}")
    assert abs(zeroed - 0.9) < 0.01
    assert np.allclose(kept, 10.0, rtol=1e-5)


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_positional_dropout_rate_is_keep_prob()
    print("confirmed: dropout-positional-is-keep-prob")
