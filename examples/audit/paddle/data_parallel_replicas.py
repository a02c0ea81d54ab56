"""Data parallelism: paddle.DataParallel over gloo, each rank training on its share of the batch, as a script
`python -m paddle.distributed.launch` starts. `audit --replicas 2` starts the ranks with the launcher's variables:

    python -m conformance audit examples/audit/paddle/data_parallel_replicas.py:build --framework paddle --replicas 2

A BatchNorm between two layers: DataParallel averages the gradients, so the parameters stay equal on every rank,
and each rank updates the BatchNorm's running statistics with its own rows (replica-statistics-differ).
"""
import paddle
import paddle.distributed as dist
from paddle import nn


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.first, self.norm, self.second = nn.Linear(4, 8), nn.BatchNorm1D(8), nn.Linear(8, 2)

    def forward(self, x):
        return self.second(nn.functional.relu(self.norm(self.first(x))))


def build():
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    paddle.seed(0)
    model = Net()
    parallel = paddle.DataParallel(model)
    optimizer = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    generator = paddle.randn([16, 6])  # the same on every rank: paddle.seed(0)
    x, y = generator[rank::world, :4], generator[rank::world, 4:]

    def step():
        loss = nn.functional.mse_loss(parallel(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()

    return {"model": model, "optimizer": optimizer, "step": step}
