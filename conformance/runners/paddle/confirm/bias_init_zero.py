"""bias-init-zero

paddle.nn.Linear and paddle.nn.Conv2D built without bias_attr start their bias at zero ("the bias will be
initialized to zero"); torch's nn.Linear and nn.Conv2d draw it from U(-1/sqrt(fan_in), 1/sqrt(fan_in)).

Upstream: https://paddlepaddle.org.cn/documentation/docs/en/api/paddle/nn/Linear_en.html
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.seed(0)


def test_biases_start_at_zero():
    linear, conv = paddle.nn.Linear(256, 64), paddle.nn.Conv2D(16, 8, 3, padding=1)
    print("Linear bias max |b|", float(np.abs(linear.bias.numpy()).max()), "| Conv2D bias max |b|", float(np.abs(conv.bias.numpy()).max()))
    assert not np.any(linear.bias.numpy()) and not np.any(conv.bias.numpy())


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_biases_start_at_zero()
    print("confirmed: bias-init-zero")
