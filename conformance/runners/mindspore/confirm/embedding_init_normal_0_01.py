"""embedding-init-normal-0.01

MindSpore: nn.Embedding built without embedding_table uses 'normal', the Normal initializer whose default
sigma is 0.01: a table 100 times smaller than torch's nn.Embedding, which draws N(0, 1) (MindSpore's own
mapping page: "MindSpore: ... Default: sigma=0.01, mean=0.0").

Upstream: https://www.mindspore.cn/docs/zh-CN/r2.11.0/api_python/nn/mindspore.nn.Embedding.html (default 'normal'),
https://mindspore.cn/docs/en/r2.0.0-alpha/note/api_mapping/pytorch_diff/InitNormal.html (Normal's sigma=0.01)
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402

ms.set_seed(0)


def test_embedding_is_normal_001():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    table = nn.Embedding(1000, 16).embedding_table.asnumpy().astype(np.float64)
    print(f"nn.Embedding(1000, 16): std {table.std():.5f} (Normal(sigma=0.01), torch 1.0)")
    assert abs(table.std() / 0.01 - 1) < 0.05


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_embedding_is_normal_001()
    print("confirmed: embedding-init-normal-0.01")
