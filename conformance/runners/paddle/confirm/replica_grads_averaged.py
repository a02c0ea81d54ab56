"""replica-grads-averaged

paddle.DataParallel (ranks started by paddle.distributed.launch, gloo on CPU) averages the replicas' gradients:
each replica's is the gradient of its own rows' mean loss, so with unequal shares (2 and 6 samples of a batch of 8)
a sample of the smaller share weighs three times a sample of the larger, where one device on the 8 samples weighs
all of them the same. Each rank keeps its own BatchNorm statistics (DataParallel has no broadcast of buffers).

Upstream: no upstream page states it (paddle.DataParallel's page says how to launch it, not how it combines).
"""
import json
import os
import subprocess
import sys
import tempfile
import warnings

os.environ.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ INFO/WARNING logs; before the import
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402

SHARES = [2, 6]
RNG = np.random.default_rng(0)
X, T = RNG.normal(size=(8, 4)).astype(np.float32), RNG.normal(size=(8, 1)).astype(np.float32)
W = RNG.normal(size=(4, 1)).astype(np.float32)


def rank_main(out_dir):
    """One rank, as the launcher starts it: its own rows through DataParallel; its gradient written out."""
    import paddle.distributed as dist
    dist.init_parallel_env()
    rank = dist.get_rank()
    net = paddle.nn.Linear(4, 1)
    net.weight.set_value(W)
    model = paddle.DataParallel(net)
    rows = slice(sum(SHARES[:rank]), sum(SHARES[:rank + 1]))
    ((model(paddle.to_tensor(X[rows])) - paddle.to_tensor(T[rows])) ** 2).mean().backward()
    with open(os.path.join(out_dir, f"{rank}.json"), "w") as fh:
        json.dump(net.weight.grad.numpy().ravel().tolist(), fh)


def mean_grad(rows):
    """The gradient of the mean loss over `rows` on one device."""
    net = paddle.nn.Linear(4, 1)
    net.weight.set_value(W)
    ((net(paddle.to_tensor(X[rows])) - paddle.to_tensor(T[rows])) ** 2).mean().backward()
    return net.weight.grad.numpy().ravel()


def test_dataparallel_averages_the_replicas_mean_gradients():
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", "2",
                        "--log_dir", os.path.join(out, "log"), os.path.abspath(__file__), out],
                       check=True, capture_output=True, timeout=300)
        grads = [np.array(json.load(open(os.path.join(out, f"{r}.json")))) for r in (0, 1)]
    own = (mean_grad(slice(0, 2)) + mean_grad(slice(2, 8))) / 2
    whole = mean_grad(slice(0, 8))
    print("DataParallel gradient (rank 0)", grads[0].tolist())
    print("mean of the replicas' means   ", own.tolist())
    print("one device on the batch       ", whole.tolist())
    assert np.array_equal(grads[0], grads[1])
    assert np.allclose(grads[0], own, atol=1e-6) and not np.allclose(grads[0], whole, atol=1e-3)


if __name__ == "__main__":
    if "PADDLE_TRAINER_ID" in os.environ:  # started by the launcher: a rank
        rank_main(sys.argv[1])
    else:
        print("paddle", paddle.__version__)
        test_dataparallel_averages_the_replicas_mean_gradients()
        print("confirmed: replica-grads-averaged")
