"""ce-all-ignored-mean-zero

paddle.nn.CrossEntropyLoss, reduction "mean", on a batch whose labels are all ignore_index: the loss is 0 (Paddle
divides the zero sum by count + (count == 0), or by the batch size for a negative ignore_index), where torch's mean
over no sample is 0 / 0, NaN. The gradient is zero in both.

Upstream: no upstream page states it.
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

SCORES = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0], [0.0, 0.5, -0.5]], np.float32)


def test_all_ignored_batch_gives_zero():
    for ignore_index, kw in ((0, {"ignore_index": 0}), (-100, {})):
        scores = paddle.to_tensor(SCORES, stop_gradient=False)
        loss = paddle.nn.CrossEntropyLoss(**kw)(scores, paddle.to_tensor(np.full(3, ignore_index, np.int64)))
        loss.backward()
        print(f"ignore_index {ignore_index}, every label ignored: loss {loss.item()} (torch: nan), "
              f"largest |gradient| {np.abs(scores.grad.numpy()).max()}")
        assert loss.item() == 0.0 and not np.isnan(loss.item())
        assert np.all(scores.grad.numpy() == 0)


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_all_ignored_batch_gives_zero()
    print("confirmed: ce-all-ignored-mean-zero")
