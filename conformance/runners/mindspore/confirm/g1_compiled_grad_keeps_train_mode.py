"""MindSpore GRAPH_MODE: the graph value_and_grad compiles at its first call keeps the train/eval mode the
model had then. After net.set_train(False) the same grad_fn still runs BatchNorm in train mode (batch
statistics, moving statistics updated); a Cell call recompiles per phase and a fresh grad_fn sees the
new mode, and so does nn.TrainOneStepCell (a Cell: set_train(False) changes its phase). PyNative honours
set_train at every call. Confirms: seed-4-bn-stats-not-regularized[*,default] under --mode graph --api
loop (variant compiled-grad-keeps-first-mode, scoped to graph and loop)."""
import numpy as np
import mindspore as ms
from mindspore import nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc, self.bn, self.out = nn.Dense(4, 4, has_bias=False), nn.BatchNorm1d(4), nn.Dense(4, 2)

    def construct(self, x):
        return self.out(self.bn(self.fc(x)))


rng = np.random.default_rng(0)
x, t = (ms.Tensor(rng.normal(size=s).astype(np.float32)) for s in ((8, 4), (8, 2)))
for mode, name in ((ms.PYNATIVE_MODE, "PYNATIVE_MODE"), (ms.GRAPH_MODE, "GRAPH_MODE")):
    ms.set_context(mode=mode)
    net = Net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)

    def forward_fn(x, t):
        return ((net(x) - t) ** 2).mean()
    grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters)
    net.set_train(True)
    opt(grad_fn(x, t)[1])  # compiled here (GRAPH_MODE), in train mode
    net.set_train(False)
    before = net.bn.moving_mean.asnumpy().copy()
    opt(grad_fn(x, t)[1])  # an eval-mode step through the same grad_fn
    stale = not np.array_equal(before, net.bn.moving_mean.asnumpy())
    before = net.bn.moving_mean.asnumpy().copy()
    net(x)  # a Cell call in eval mode
    cell_moved = not np.array_equal(before, net.bn.moving_mean.asnumpy())
    ms.value_and_grad(forward_fn, None, opt.parameters)(x, t)  # a fresh grad_fn in eval mode
    fresh_moved = not np.array_equal(before, net.bn.moving_mean.asnumpy())
    trainer = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    trainer.set_train(True)
    trainer(x, t)  # compiled here (GRAPH_MODE), in train mode
    trainer.set_train(False)
    before = net.bn.moving_mean.asnumpy().copy()
    trainer(x, t)
    trainer_moved = not np.array_equal(before, net.bn.moving_mean.asnumpy())
    print(f"{name:13s}: after set_train(False), the first grad_fn updated moving_mean={stale}; "
          f"a Cell call updated it={cell_moved}; a fresh grad_fn updated it={fresh_moved}; "
          f"TrainOneStepCell updated it={trainer_moved}")
    if mode == ms.GRAPH_MODE:
        assert stale and not cell_moved and not fresh_moved and not trainer_moved
    else:
        assert not (stale or cell_moved or fresh_moved or trainer_moved)
print("confirmed: in GRAPH_MODE a compiled gradient function keeps the train mode of its first call")
