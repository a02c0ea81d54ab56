"""conv-default-pads-same

MindSpore: nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, pad_mode='same', padding=0, ...): built
without pad_mode it pads 'same', so at stride 1 the image keeps its size, where torch's Conv2d (padding=0) shrinks
it by the kernel less one. Code ported from torch that leaves the padding out then hands the next layer a larger
image (a Dense after a flatten gets more inputs than it was built for). The reference semantics pad nothing.

Upstream: https://www.mindspore.cn/docs/en/r2.4.0/api_python/nn/mindspore.nn.Conv2d.html
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402


def test_conv_without_padding_keeps_the_image_size():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    image = ms.Tensor(np.ones((1, 1, 8, 8), np.float32))
    for k in (3, 5):
        conv = nn.Conv2d(1, 2, k)  # pad_mode and padding left out, as torch code leaves padding
        side = conv(image).shape[-1]
        print(f"nn.Conv2d(1, 2, {k}) on an 8 x 8 image: {side} x {side} (pad_mode {conv.pad_mode!r}); "
              f"torch's Conv2d(1, 2, {k}) gives {8 - k + 1} x {8 - k + 1}")
        assert side == 8 and conv.pad_mode == "same"
    valid = nn.Conv2d(1, 2, 3, pad_mode="valid")(image).shape[-1]
    assert valid == 6  # torch's size needs pad_mode='valid' (or 'pad' with padding=0)


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_conv_without_padding_keeps_the_image_size()
    print("confirmed: conv-default-pads-same")
