"""Finding framework objects a model holds through plain Python containers, for every probe."""
from __future__ import annotations

from typing import Iterator

MAX_DEPTH = 8           # containers inside containers
MAX_VISITED = 100_000   # objects looked at per model attribute dictionary


def plain_contents(attributes: dict, types: tuple[type, ...]) -> Iterator[tuple[str, object]]:
    """(path, object) for each instance of `types` among `attributes` (an object's __dict__) or
    inside the lists, tuples, sets and dicts they hold, nested; paths read like Python:
    `blocks[0]`, `heads['cls']`. Containers are not entered twice, nor found objects."""
    seen: set[int] = set()
    budget = [MAX_VISITED]

    def walk(obj, path: str, depth: int):
        budget[0] -= 1
        if budget[0] < 0 or id(obj) in seen:
            return
        if isinstance(obj, types):
            seen.add(id(obj))
            yield path, obj
            return
        if depth >= MAX_DEPTH or isinstance(obj, (str, bytes)):
            return
        if isinstance(obj, dict):
            seen.add(id(obj))
            for key, value in list(obj.items()):
                yield from walk(value, f"{path}[{key!r}]", depth + 1)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            seen.add(id(obj))
            for n, value in enumerate(list(obj)):
                yield from walk(value, f"{path}[{n}]", depth + 1)

    for name, value in list(attributes.items()):
        yield from walk(value, str(name), 0)
