"""Data parallelism: ParallelMode.DATA_PARALLEL on the CPU, each rank training on its share of the batch, as a script
`msrun --worker_num=2` starts. `audit --replicas 2` starts the ranks with msrun's variables, and its scheduler:

    python -m conformance audit examples/audit/mindspore/data_parallel_replicas.py:build --framework mindspore --replicas 2

A BatchNorm between two layers: TrainOneStepCell averages the gradients over the ranks (its DistributedGradReducer,
gradients_mean=True), so the parameters stay equal on every rank, and each rank updates the BatchNorm's moving
statistics with its own rows (replica-statistics-differ).
"""
import numpy as np

import mindspore as ms
from mindspore import nn, ops
from mindspore.communication import get_group_size, get_rank, init


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.first, self.norm, self.second = nn.Dense(4, 8), nn.BatchNorm1d(8), nn.Dense(8, 2)

    def construct(self, x):
        return self.second(ops.relu(self.norm(self.first(x))))


def build():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    init()
    rank, world = get_rank(), get_group_size()
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    ms.set_seed(0)  # the same initial weights on every rank
    model = Net()
    optimizer = nn.SGD(model.trainable_params(), learning_rate=0.1)
    train = nn.TrainOneStepCell(nn.WithLossCell(model, nn.MSELoss()), optimizer)
    train.set_train()
    data = np.random.default_rng(0).standard_normal((16, 6)).astype(np.float32)
    x, y = ms.Tensor(data[rank::world, :4]), ms.Tensor(data[rank::world, 4:])

    def step():
        train(x, y)

    return {"model": model, "optimizer": optimizer, "step": step}
