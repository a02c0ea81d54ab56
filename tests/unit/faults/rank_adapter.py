"""Test-only data-parallel adapter: each rank is the reference oracle on its own rows (no gradients are combined),
started by a small launcher as torchrun starts ranks; a layer of the case's model names a fault of rank 1."""
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from conformance.oracle.reference import ReferenceRunner
from conformance.runners.base import Offers, RankGroup

LAUNCHER = Path(__file__).with_name("fake_launcher.py")


def fake_launch(world, script, nodes=1, node=0, master=""):  # a node's launcher starts its share of the ranks
    return [sys.executable, str(LAUNCHER), str(world // nodes), script, str(node * (world // nodes))]


class RankRunner(ReferenceRunner):
    framework = "reference"
    offers = Offers(devices=("cpu",), runs=({}, {"replicas": "2"}))
    parallelism = RankGroup(launch=fake_launch)
    features = ReferenceRunner.features

    def __init__(self, run=None, **axes):
        super().__init__(run, **axes)
        self.rank = int(os.environ.get("FAKE_RANK", "0"))
        if os.environ.get("FAKE_LEAVE_TEMP"):  # a temporary file no one removes, as a killed process leaves one
            os.close(tempfile.mkstemp(prefix=os.environ["FAKE_LEAVE_TEMP"])[0])
        if os.environ.get("FAKE_RANK_NEVER_READY") and self.rank == 1:
            time.sleep(3600)

    def build(self, model, values):
        if "raisesalone" in model.layers:  # rank 1 raises while rank 0 waits, as in a collective
            if self.rank == 1:
                raise RuntimeError("injected failure on rank 1 alone")
            time.sleep(3600)
        if "hangboth" in model.layers:  # rank 1 hangs, and rank 0 waits for it as in a collective
            time.sleep(3600)
        if self.rank == 1:
            if "crash" in model.layers:
                os.kill(os.getpid(), signal.SIGSEGV)
            if "hang" in model.layers:
                time.sleep(3600)
            if "raises" in model.layers:
                raise RuntimeError("injected failure on rank 1")
        super().build(model, values)


class NoLauncherRunner(RankRunner):
    parallelism = RankGroup(launch=lambda world, script: [
        sys.executable, "-c", "print('launcher: no such host'); raise SystemExit(3)"])
