"""MindSpore's device and execution mode are process-wide. The device is set once, here, at collection:
ms.set_device refuses once a kernel has run, and every MindSporeRunner sets it (the confirm snippets,
collected in the same process, run kernels without setting it). Each test starts and ends in PyNative
(a graph runner, or a snippet, leaves GRAPH_MODE behind); a test of hand-written GRAPH_MODE code asks
for `graph_mode`."""
import mindspore as ms
import pytest

from conformance.runners.mindspore.runner import MindSporeRunner

MindSporeRunner()  # before any kernel runs


@pytest.fixture(autouse=True)
def pynative():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.fixture
def graph_mode(pynative):
    ms.set_context(mode=ms.GRAPH_MODE)
