"""replica-grads-summed

MindSpore data parallelism (set_auto_parallel_context(parallel_mode=DATA_PARALLEL), ranks started by msrun, a custom
loop that hands value_and_grad's gradients to nn.DistributedGradReducer, as MindSpore's data-parallel tutorial
writes it) sums the replicas' gradients: gradients_mean defaults to False, so every update is the replica count
times the single-device one on the global batch with the mean loss.

Upstream: https://www.mindspore.cn/docs/en/stable/api_python/mindspore/mindspore.set_auto_parallel_context.html
"""
import json
import os
import socket
import subprocess
import sys
import tempfile

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
import numpy as np  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402

RNG = np.random.default_rng(0)
X, T = RNG.normal(size=(8, 4)).astype(np.float32), RNG.normal(size=(8, 1)).astype(np.float32)
W = RNG.normal(size=(1, 4)).astype(np.float32)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 1)
        self.fc.weight.set_data(ms.Tensor(W))
        self.fc.bias.set_data(ms.Tensor(np.zeros(1, np.float32)))  # the same start in every process

    def construct(self, x):
        return self.fc(x)


def mean_grad(net, x, t):
    loss_fn = lambda x, t: ((net(x) - t) ** 2).mean()  # noqa: E731
    return ms.value_and_grad(loss_fn, None, net.trainable_params())(ms.Tensor(x), ms.Tensor(t))[1]


def rank_main(out_dir):
    """One rank (msrun also runs this file as its scheduler, whose init() serves the cluster and returns)."""
    from mindspore.communication import get_rank, init
    ms.set_context(mode=ms.PYNATIVE_MODE)
    init()
    if os.environ.get("MS_ROLE") == "MS_SCHED":
        return
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL)
    rank, net = get_rank(), Net()
    reducer = nn.DistributedGradReducer(net.trainable_params())
    rows = slice(4 * rank, 4 * rank + 4)
    grads = reducer(mean_grad(net, X[rows], T[rows]))
    with open(os.path.join(out_dir, f"{rank}.json"), "w") as fh:
        json.dump(grads[0].asnumpy().ravel().tolist(), fh)


def test_the_data_parallel_reducer_sums_the_replicas_gradients():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "mindspore.parallel.cluster.run", "--worker_num=2", "--local_worker_num=2",
                        "--master_addr=127.0.0.1", f"--master_port={port}", f"--log_dir={out}/log", "--join=True",
                        os.path.abspath(__file__), out], check=True, capture_output=True, timeout=300, env=env)
        grads = [np.array(json.load(open(os.path.join(out, f"{r}.json")))) for r in (0, 1)]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    whole = mean_grad(Net(), X, T)[0].asnumpy().ravel()
    print("DATA_PARALLEL gradient (rank 0)", grads[0].tolist())
    print("one device on the batch        ", whole.tolist())
    assert np.array_equal(grads[0], grads[1])
    assert np.allclose(grads[0], 2 * whole, atol=1e-5)


if __name__ == "__main__":
    if "MS_ROLE" in os.environ:  # started by msrun: a rank or its scheduler
        rank_main(sys.argv[1])
    else:
        print("mindspore", ms.__version__)
        test_the_data_parallel_reducer_sums_the_replicas_gradients()
        print("confirmed: replica-grads-summed")
