"""plain-contained-layers-stay-train

Paddle's Layer.train()/eval() visit registered sublayers only: a BatchNorm kept in a plain list or dict
stays in train mode after net.eval(), normalising with the batch statistics and updating its running
statistics, and a Dropout in a plain list keeps dropping. The reference semantics switch every layer
the model holds; in a LayerList they are switched.

Upstream: https://github.com/PaddlePaddle/Paddle/pull/21734
"""
import os
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

CONTAINERS = {"list": list, "dict": lambda layers: {"bn": layers[0]}, "LayerList": paddle.nn.LayerList}


def bn_after_eval(kind):
    """net.eval(), then one forward of the BatchNorm: its mode, how far its running mean moved, and
    whether the output is normalised with the batch's own statistics (train mode)."""
    paddle.seed(0)
    net = paddle.nn.Layer()
    bn = paddle.nn.BatchNorm1D(3)
    net.blocks = CONTAINERS[kind]([bn])
    net.eval()
    before = bn._mean.numpy().copy()
    x = paddle.randn([8, 3])
    y = bn(x).numpy()
    h = x.numpy()
    with_batch_stats = np.allclose(y, (h - h.mean(0)) / np.sqrt(h.var(0) + 1e-5), atol=1e-5)
    moved = float(np.abs(bn._mean.numpy() - before).max())
    print(f"BatchNorm1D in a {kind:9s} after net.eval(): bn.training={bn.training}, running mean moved by "
          f"{moved:.3g}, output normalised with the batch statistics: {with_batch_stats}")
    return bn.training, moved, with_batch_stats


def dropout_after_eval(kind):
    """net.eval(), then the Dropout on ones: the identity where it was switched to eval."""
    paddle.seed(0)
    net = paddle.nn.Layer()
    drop = paddle.nn.Dropout(p=0.5)
    net.blocks = CONTAINERS[kind]([drop])
    net.eval()
    x = paddle.ones([4, 6])
    y = drop(x).numpy()
    identity = np.array_equal(y, x.numpy())
    print(f"Dropout(0.5) in a {kind:9s} after net.eval(): drop.training={drop.training}, output equals input: "
          f"{identity} ({int((y == 0).sum())} of {y.size} dropped)")
    return drop.training, identity


def test_batchnorm_in_plain_list_stays_train():
    training, moved, with_batch_stats = bn_after_eval("list")
    assert training and moved > 0 and with_batch_stats


def test_batchnorm_in_plain_dict_stays_train():
    training, moved, with_batch_stats = bn_after_eval("dict")
    assert training and moved > 0 and with_batch_stats


def test_dropout_in_plain_list_keeps_dropping():
    training, identity = dropout_after_eval("list")
    assert training and not identity


def test_batchnorm_in_layer_list_follows_eval():
    """The control: in a LayerList the BatchNorm is switched to eval."""
    training, moved, with_batch_stats = bn_after_eval("LayerList")
    assert not training and moved == 0 and not with_batch_stats


def test_dropout_in_layer_list_follows_eval():
    """The control: in a LayerList the Dropout is switched to eval (the identity)."""
    training, identity = dropout_after_eval("LayerList")
    assert not training and identity


if __name__ == "__main__":
    print("paddle", paddle.__version__)
    test_batchnorm_in_plain_list_stays_train()
    test_batchnorm_in_plain_dict_stays_train()
    test_dropout_in_plain_list_keeps_dropping()
    test_batchnorm_in_layer_list_follows_eval()
    test_dropout_in_layer_list_follows_eval()
    print("confirmed: plain-contained-layers-stay-train")
