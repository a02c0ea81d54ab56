"""padding-row-looks-up-zeros

paddle.nn.Embedding(padding_idx=p) outputs zeros wherever the input is p, whatever row p holds (a row
loaded from a pretrained table, say), and that row gets no gradient. The reference semantics (torch)
return the stored row for p; only its gradient is zero.

Upstream: https://paddlepaddle.org.cn/documentation/api/paddle/nn/Embedding_cn.html
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402


def test_padding_index_looks_up_zeros():
    emb = paddle.nn.Embedding(5, 3, padding_idx=0)  # the default constructor otherwise (sparse=False)
    emb.weight.set_value(np.ones((5, 3), np.float32))  # e.g. a pretrained table whose row 0 is not zero
    y = emb(paddle.to_tensor(np.array([0, 1, 1], np.int64)))
    y.sum().backward()
    grad = emb.weight.grad.numpy()
    print(f"weight row 0: {emb.weight.numpy()[0]}, lookup of index 0: {y.numpy()[0]} (the reference: the stored row); "
          f"gradient of row 0: {grad[0]}, of row 1 (looked up twice): {grad[1]}")
    assert np.all(emb.weight.numpy()[0] == 1)
    assert np.all(y.numpy()[0] == 0) and np.all(y.numpy()[1:] == 1)
    assert np.all(grad[0] == 0) and np.all(grad[1] == 2)


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_padding_index_looks_up_zeros()
    print("confirmed: padding-row-looks-up-zeros")
