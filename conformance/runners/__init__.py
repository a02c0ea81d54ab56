"""Adapter registry: framework name -> module:class, imported only when that framework runs."""
from __future__ import annotations

import importlib

from .base import APIS, DEVICES, MODES, Runner, Unavailable, Unsupported

# "reference" runs the NumPy oracle through the harness: a self-check of the spec, no framework needed.
ADAPTERS = {"torch": "conformance.runners.torch:TorchRunner",
            "paddle": "conformance.runners.paddle:PaddleRunner",
            "mindspore": "conformance.runners.mindspore:MindSporeRunner",
            "tensorflow": "conformance.runners.tensorflow:TensorFlowRunner",
            "reference": "conformance.reference:ReferenceRunner"}
# Frameworks the suite targets; each runs in the tox env of the same name.
FRAMEWORKS = ("torch", "paddle", "mindspore", "tensorflow", "reference")


class FrameworkMissing(Exception):
    """The framework (or its adapter) is not available in this environment."""


def adapter_path(framework: str) -> str:
    """'module:Class' of the framework's adapter, without importing anything."""
    if framework not in FRAMEWORKS:
        raise FrameworkMissing(f"unknown framework {framework!r}; choose from {', '.join(FRAMEWORKS)}")
    if framework not in ADAPTERS:
        raise FrameworkMissing(f"no adapter for {framework} yet; available: {', '.join(ADAPTERS)}")
    return ADAPTERS[framework]


def load_adapter(path: str, framework: str) -> type[Runner]:
    """Import the adapter class for `framework` from 'module:Class' (see adapter_path)."""
    module_name, class_name = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise FrameworkMissing(f"{framework} is not installed in this environment ({exc.name} missing); "
                               f"run it with `tox -e {framework}`") from None
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise FrameworkMissing(f"{module_name} has no adapter class {class_name!r}") from None


__all__ = ["ADAPTERS", "APIS", "DEVICES", "FRAMEWORKS", "MODES", "FrameworkMissing", "Runner", "Unavailable",
           "Unsupported", "adapter_path", "load_adapter"]
