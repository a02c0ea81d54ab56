"""Test-only adapter: the reference oracle, plus the fault named by a layer of the case's model."""
import os
import signal
import time

import numpy as np

from conformance.oracle.reference import ReferenceRunner
from conformance.runners.base import Unsupported


class FaultRunner(ReferenceRunner):
    framework = "faulty"

    def build(self, model, values):
        layers = set(model.layers)
        if "segfault" in layers:
            os.kill(os.getpid(), signal.SIGSEGV)
        if "abort" in layers:
            os.abort()
        if "exit" in layers:
            os._exit(7)
        if "hang" in layers:
            time.sleep(3600)
        if "hog" in layers:
            np.ones(2 ** 43)  # 64 TiB: refused at once with MemoryError
        if "raises" in layers:
            raise RuntimeError("injected failure")
        if "unsupported" in layers:
            raise Unsupported("injected: cannot express this")
        if "surrogate" in layers:  # as from a file name that is not UTF-8
            raise RuntimeError("cannot open /data/caf\udce9.bin")
        if "verbose" in layers:
            raise RuntimeError("x" * 10_000_000)
        super().build(model, values)

    def values(self):
        values = super().values()
        if "nan" in self.model.layers:
            values = {k: np.full_like(v, np.nan) for k, v in values.items()}
        return values
