"""One node's TensorFlow workers for a data-parallel run over several nodes (`run --nodes N`).

TensorFlow has no launcher: MultiWorkerMirroredStrategy reads the cluster, every worker's host:port, and the task
of this process from the TF_CONFIG environment variable, and the user starts each worker with its own. This
starts one node's workers that way, as torchrun starts one node's ranks:

    python -m conformance.runners.tensorflow.workers FIRST COUNT CLUSTER SCRIPT

runs SCRIPT as workers FIRST to FIRST + COUNT - 1 of CLUSTER (host:port,host:port,...). It ends when they all
have; the first worker that fails ends the others and gives its exit status. Each worker dies with this process.
"""
import json
import os
import subprocess
import sys
import time

from conformance.kernel.processes import die_with_parent

WORKER_ENV = "CONFORMANCE_TF_WORKER"  # set in a worker started here: its TF_CONFIG is this run's, not the user's


def main(argv: list[str]) -> int:
    die_with_parent()
    first, count, cluster, script = int(argv[0]), int(argv[1]), argv[2].split(","), argv[3]
    workers = []
    for index in range(first, first + count):
        config = {"cluster": {"worker": cluster}, "task": {"type": "worker", "index": index}}
        workers.append(subprocess.Popen([sys.executable, script], preexec_fn=die_with_parent, stdin=subprocess.DEVNULL,
                                        env={**os.environ, "TF_CONFIG": json.dumps(config), WORKER_ENV: "1"}))
    while True:
        codes = [worker.poll() for worker in workers]
        failed = [code for code in codes if code not in (None, 0)]
        if failed or None not in codes:
            for worker in workers:
                worker.kill()
                worker.wait()
            return (failed[0] if failed[0] > 0 else 1) if failed else 0
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
