"""The registry of rooms: one folder per framework, with the same files in each (docs/contributing.md:
"A framework"). A room's room.yaml names its tox envs and its place in the report. Its __init__.py declares
what it offers (OFFERS) and names its adapter class (ADAPTER), and, where some of its runs have an adapter
class of their own, that class for the runs with those axes (ADAPTERS: (axes, 'module:Class') pairs); it
imports nothing of its framework, so the registry reads it anywhere. The framework is imported only when a
run starts, in its worker process.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from ..run import Run
from .base import Offers, Runner, Unavailable, Unsupported
from .manifest import load_rooms

# The framework rooms (a room.yaml each), in the report's order; each runs in the tox env of the same name.
ROOMS = tuple(load_rooms())
# "reference" runs the NumPy oracle through the harness: a self-check of the spec, no framework needed.
FRAMEWORKS = (*ROOMS, "reference")
REFERENCE = "conformance.oracle.reference:ReferenceRunner"


class FrameworkMissing(Exception):
    """The framework (or its adapter) is not available in this environment."""


def room(framework: str) -> ModuleType:
    """The room's package (its declarations only)."""
    if framework not in ROOMS:
        raise FrameworkMissing(f"unknown framework {framework!r}; choose from {', '.join(FRAMEWORKS)}")
    return importlib.import_module(f"{__name__}.{framework}")


def offers(framework: str) -> Offers:
    if framework == "reference":  # the oracle (NumPy only) declares its runs on its class
        return load_adapter(REFERENCE, framework).offers
    return room(framework).OFFERS


def adapter_path(framework: str, run: Run | None = None) -> str:
    """'module:Class' of the framework's adapter, without importing the framework: for `run`, the class the
    room's ADAPTERS names for a run with those axes (its default backend filled in), else ADAPTER."""
    if framework == "reference":
        return REFERENCE
    declared = room(framework)
    if run is not None:
        try:
            run = declared.OFFERS.resolve(run)
        except Unavailable:  # a run the room does not offer: its adapter says so, in the worker, in one line
            return declared.ADAPTER
        for axes, path in getattr(declared, "ADAPTERS", ()):
            if all(getattr(run, axis) == value for axis, value in axes.items()):
                return path
    return declared.ADAPTER


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


__all__ = ["FRAMEWORKS", "ROOMS", "FrameworkMissing", "Offers", "Runner", "Unavailable", "Unsupported",
           "adapter_path", "load_adapter", "offers", "room"]
