"""compiled-grad-keeps-first-mode

MindSpore GRAPH_MODE: value_and_grad returns a function whose graph is compiled at its first call, with
the train/eval mode the model's Cells had then, and reused: after net.set_train(False) the same grad_fn
still runs BatchNorm in train mode and keeps updating its moving statistics. A Cell call recompiles per
train/predict phase, a fresh grad_fn sees the new mode, and so does nn.TrainOneStepCell (a Cell:
set_train changes its phase); PyNative honours set_train at every call. The reference semantics run
every layer in the mode the model is in at that step.

Upstream: no upstream page states it (jit's compile cache is keyed on the function and its arguments).
"""
import os

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc, self.bn, self.out = nn.Dense(4, 4, has_bias=False), nn.BatchNorm1d(4), nn.Dense(4, 2)

    def construct(self, x):
        return self.out(self.bn(self.fc(x)))


def eval_after_train(mode):
    """Train one step, switch the model to eval, and report which eval-mode calls moved moving_mean."""
    ms.set_context(mode=mode)
    ms.set_seed(0)
    rng = np.random.default_rng(0)
    x, t = (ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))
    net = Net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)

    def forward_fn(x, t):
        return ((net(x) - t) ** 2).mean()

    def moves(call):
        before = net.bn.moving_mean.asnumpy().copy()
        call()
        return not np.array_equal(before, net.bn.moving_mean.asnumpy())

    grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters)
    net.set_train(True)
    opt(grad_fn(x, t)[1])  # GRAPH_MODE compiles grad_fn here, in train mode
    net.set_train(False)
    seen = {"the first grad_fn": moves(lambda: opt(grad_fn(x, t)[1])),
            "a Cell call": moves(lambda: net(x)),
            "a fresh grad_fn": moves(lambda: ms.value_and_grad(forward_fn, None, opt.parameters)(x, t))}
    trainer = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    trainer.set_train(True)
    trainer(x, t)  # compiled here in train mode
    trainer.set_train(False)
    seen["TrainOneStepCell"] = moves(lambda: trainer(x, t))
    print(f"{'GRAPH_MODE' if mode == ms.GRAPH_MODE else 'PYNATIVE_MODE'}, eval-mode calls after a train step "
          "updated moving_mean: " + ", ".join(f"{k} {v}" for k, v in seen.items()))
    return seen


def test_graph_mode_grad_fn_keeps_the_train_mode_of_its_first_call():
    seen = eval_after_train(ms.GRAPH_MODE)
    assert seen["the first grad_fn"]  # still in train mode after net.set_train(False)
    # the variant's scope: what recompiles per phase follows set_train (apis: [loop])
    assert not (seen["a Cell call"] or seen["a fresh grad_fn"] or seen["TrainOneStepCell"])


def test_pynative_follows_set_train_at_every_call():
    seen = eval_after_train(ms.PYNATIVE_MODE)  # the variant's scope: modes [graph]
    assert not any(seen.values())


if __name__ == "__main__":
    print("mindspore", ms.__version__)
    test_graph_mode_grad_fn_keeps_the_train_mode_of_its_first_call()
    test_pynative_follows_set_train_at_every_call()
    print("confirmed: compiled-grad-keeps-first-mode")
