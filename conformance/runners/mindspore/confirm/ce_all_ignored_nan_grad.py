"""ce-all-ignored-nan-grad

MindSpore 2.7: nn.CrossEntropyLoss() (reduction 'mean') of a batch whose labels are all its ignore_index
(the default -100, or one it is given; with label smoothing too) returns NaN, as torch's does, but its
gradient is NaN in every logit, where torch's is zero: the mean is sum / count with count 0, the 1/0 = inf
reaches the masked samples, and masked_fill's gradient there is inf * 0 = NaN. One update with it makes
every parameter upstream NaN. reduction='sum' gives 0 and a zero gradient; a batch with one sample not
ignored is right. PyNative and GRAPH_MODE alike. MindSpore 2.10 gives the zero gradient (masked_fill's
gradient there is 0), so this snippet fails there.

Upstream: no upstream page states it (the nn.CrossEntropyLoss page's mean divides by the count of samples not
ignored, 0 here; MaskedFill's bprop in 2.7 is dout * (1 - mask), so an inf gradient gives inf * 0 = NaN)
"""
import os
import tempfile

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
os.environ.setdefault("MS_OM_PATH", tempfile.mkdtemp(prefix="mindspore-om-"))  # a refused compile's IR, not in the cwd
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402

LOGITS = np.array([[0.5, -1.0, 2.0], [0.1, 0.2, 0.3], [1.0, 0.0, -1.0], [0.3, 0.3, 0.1]], np.float32)


def loss_and_grad(mode, labels, **settings):
    """The loss and its gradient w.r.t. the logits, nn.CrossEntropyLoss(**settings) on int32 labels."""
    ms.set_context(mode=mode)
    loss_fn = nn.CrossEntropyLoss(**settings)
    t = ms.Tensor(np.array(labels, np.int32))

    def forward_fn(z):
        return loss_fn(z, t)
    loss, grad = ms.value_and_grad(forward_fn)(ms.Tensor(LOGITS))
    return float(loss.asnumpy()), grad.asnumpy()


def test_all_ignored_mean_has_a_nan_gradient():
    for mode, label in ((ms.PYNATIVE_MODE, "PyNative"), (ms.GRAPH_MODE, "GRAPH_MODE")):
        for settings, labels in (({}, [-100] * 4), ({"ignore_index": 0}, [0] * 4),
                                 ({"ignore_index": 0, "label_smoothing": 0.1}, [0] * 4)):
            loss, grad = loss_and_grad(mode, labels, **settings)
            print(f"{label} nn.CrossEntropyLoss({settings}) on labels {labels}: loss {loss}, gradient of the logits "
                  f"{np.unique(grad)} (torch: nan and zeros)")
            assert np.isnan(loss) and np.isnan(grad).all()
        loss, grad = loss_and_grad(mode, [0] * 4, ignore_index=0, reduction="sum")
        print(f"{label} reduction='sum', all ignored: loss {loss}, gradient {np.unique(grad)}")
        assert loss == 0 and not np.any(grad)
        loss, grad = loss_and_grad(mode, [0, 1, 2, 0], ignore_index=0)
        print(f"{label} two of four ignored: loss {loss:.6f}, gradient finite {np.isfinite(grad).all()}, "
              f"ignored rows zero {not np.any(grad[[0, 3]])}")
        assert np.isfinite(grad).all() and not np.any(grad[[0, 3]])
    ms.set_context(mode=ms.PYNATIVE_MODE)


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_all_ignored_mean_has_a_nan_gradient()
    print("confirmed: ce-all-ignored-nan-grad")
