"""Adapter registry: framework name -> module:class, imported only when that framework runs."""
from __future__ import annotations

import importlib

from .base import DEVICES, DeviceUnavailable, Runner, Unsupported

# "reference" runs the NumPy oracle through the harness: a self-check of the spec, no framework needed.
ADAPTERS = {"torch": "conformance.runners.torch:TorchRunner",
            "reference": "conformance.reference:ReferenceRunner"}
# Frameworks the suite targets; each runs in the tox env of the same name.
FRAMEWORKS = ("torch", "paddle", "mindspore", "tensorflow", "reference")


class FrameworkMissing(Exception):
    """The framework (or its adapter) is not available in this environment."""


def load_adapter(framework: str) -> type[Runner]:
    if framework not in FRAMEWORKS:
        raise FrameworkMissing(f"unknown framework {framework!r}; choose from {', '.join(FRAMEWORKS)}")
    if framework not in ADAPTERS:
        raise FrameworkMissing(f"no adapter for {framework} yet; available: {', '.join(ADAPTERS)}")
    module_name, class_name = ADAPTERS[framework].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise FrameworkMissing(f"{framework} is not installed in this environment ({exc.name} missing); "
                               f"run it with `tox -e {framework}`") from None
    return getattr(module, class_name)


__all__ = ["ADAPTERS", "DEVICES", "FRAMEWORKS", "DeviceUnavailable", "FrameworkMissing", "Runner",
           "Unsupported", "load_adapter"]
