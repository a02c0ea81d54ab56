"""pytest in a room's env (`pytest conformance/runners/<framework>`) collects the room's tests/ and its
confirm/ snippets (pyproject's python_files). A snippet confirms its variant where known.yaml says the
variant holds; on an installed version outside that range it must fail, so it is a strict xfail there:
a variant that holds beyond its range shows as a failure, and its range is then too narrow."""
import functools
from pathlib import Path

import pytest

from conformance.oracle.known import load_known, snippet_path
from conformance.run import Run, scoped
from conformance.runners import adapter_path, load_adapter


@functools.cache
def _installed(framework: str) -> str:
    return load_adapter(adapter_path(framework), framework).version()


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        if path.parent.name != "confirm":
            continue
        framework = path.parent.parent.name
        # a variant may have several entries (other runs, other versions): the snippet holds where any does
        entries = [v for v in load_known(framework) if Path(snippet_path(framework, v.variant)).name == path.name]
        if not entries:
            item.add_marker(pytest.mark.skip(reason=f"{path.name} confirms no variant of {framework}'s known.yaml"))
            continue
        version = _installed(framework)
        if not any(scoped({"versions": v.versions}, Run(framework, version)) for v in entries):
            ranges = " or ".join(v.versions for v in entries)
            item.add_marker(pytest.mark.xfail(strict=True, reason=(
                f"known.yaml bounds {entries[0].variant} to {ranges}; {framework} {version} must not show it")))
