"""Safe YAML loading for every file the suite reads (spec cases, known.yaml, expected.yaml).

Every error is a `SpecError` whose message is one line: `file:line: what is wrong`. Only
`yaml.SafeLoader` is used: nothing in a file is executed. Hostile files are bounded: size, nesting,
aliases of lists or mappings, tags and non-regular files are refused before they cost anything.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError


class SpecError(Exception):
    """A spec or known-variant file is malformed; the message is one line, even when it quotes a key
    or value with line breaks in it (they are shown escaped)."""

    def __init__(self, message: str):
        super().__init__(str(message).replace("\r", "\\r").replace("\n", "\\n"))


# Limits against hostile files; the shipped ones are under 8 KB and nest under 10 levels.

MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 64  # well below where construction would hit Python's recursion limit
# A few bytes of matrix can describe millions of instances; the shipped spec has 133.

# ---------------------------------------------------------------- YAML with line numbers
class _LineDict(dict):
    line = 0
    key_lines: dict


class _LineList(list):
    line = 0
    item_lines: list


class _Loader(yaml.SafeLoader):
    depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            # Aliases of lists or mappings let a few bytes describe an exponentially large document.
            target = self.anchors.get(event.anchor)
            if target is not None and not isinstance(target, yaml.ScalarNode):
                raise SpecError(f"{self.name}:{line}: alias *{event.anchor} refers to a list or mapping; "
                                "only plain values may be aliased")
            return super().compose_node(parent, index)
        if event.tag is not None:  # a spec needs none, and a tag of the wrong kind crashes the constructor
            raise SpecError(f"{self.name}:{line}: YAML tags are not allowed ({event.tag})")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise SpecError(f"{self.name}:{line}: nested more than {MAX_DEPTH} levels deep")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node, deep=False):
        return _construct_object(self, node, deep)


def _construct_object(loader, node, deep=False):
    try:
        return yaml.constructor.BaseConstructor.construct_object(loader, node, deep)
    except (ValueError, OverflowError) as exc:  # a plain scalar that looks typed but is not: 0b_, 2001-13-45
        raise SpecError(f"{loader.name}:{node.start_mark.line + 1}: invalid value: {exc}") from None


def _mapping(loader: _Loader, node: yaml.MappingNode) -> _LineDict:
    loader.flatten_mapping(node)
    out = _LineDict()
    out.line, out.key_lines = node.start_mark.line + 1, {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if not isinstance(key_node, yaml.ScalarNode):  # a list or mapping key is unhashable
            raise SpecError(f"{loader.name}:{line}: a mapping key must be a plain value, not a list or mapping")
        key = loader.construct_object(key_node, deep=True)
        if key in out:  # PyYAML would silently keep the last one
            raise SpecError(f"{loader.name}:{line}: duplicate key {key!r}")
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = line
    return out


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> _LineList:
    out = _LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line, out.item_lines = node.start_mark.line + 1, [c.start_mark.line + 1 for c in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """A regular file's UTF-8 text, at most `limit` bytes; ValueError with a one-line reason otherwise
    (a FIFO, a device such as /dev/zero or a link to one, a folder, a larger file, not UTF-8, unreadable).
    Every file the suite reads from outside goes through here: spec, known, expected, results, asv."""
    try:
        # O_NONBLOCK: opening a FIFO would otherwise wait for a writer
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # /dev/zero, a FIFO: endless
                raise ValueError("not a regular file")
            data = file.read(limit + 1)
    except OSError as exc:
        raise ValueError(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ValueError(f"larger than {limit // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from None


# libyaml's parser, where PyYAML has it: about ten times faster than the pure-Python one, and every
# process of a run loads the whole spec. It takes plain documents only; anything else goes to _Loader.
_CParser = getattr(yaml, "CSafeLoader", None)
if _CParser is not None:
    class _FastLoader(_CParser):
        construct_object = _construct_object

    _FastLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
    _FastLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def _plain(text: str) -> bool:
    """No tag, anchor or alias, nesting within MAX_DEPTH: what _Loader would accept without a check
    firing. A scan of libyaml's events, which never expands anything."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_CParser):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None \
                    or getattr(event, "tag", None) is not None:
                return False
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth >= MAX_DEPTH:  # a scalar inside counts one more level in _Loader
                    return False
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return False
    return True


def load_yaml(path: Path):
    try:
        text = read_text(path)
    except ValueError as exc:
        raise SpecError(f"{path}: {exc}") from None
    if _CParser is not None and _plain(text):
        try:
            return _load(_FastLoader, text, path)
        except (yaml.YAMLError, SpecError):
            pass  # _Loader words the error as it always has
    return _load(_Loader, text, path)


def _load(loader_class, text: str, path: Path):
    loader = None
    try:
        loader = loader_class(text)
        loader.name = str(path)
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        raise SpecError(f"{path}:{line}: YAML syntax error: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: YAML error: {str(exc).splitlines()[0]}") from None
    finally:
        if loader is not None:
            loader.dispose()


def _line_of(data, loc) -> int:
    """Deepest line number known along a pydantic error location."""
    line = getattr(data, "line", 0)
    for key in loc:
        if isinstance(data, _LineDict) and key in data:
            line, data = data.key_lines[key], data[key]
        elif isinstance(data, _LineList) and isinstance(key, int) and key < len(data):
            line, data = data.item_lines[key], data[key]
        # other loc parts name union members or validators: skip them
    return line


def describe_error(err: dict) -> str:
    # parts that name a union member or a validator, not a key
    loc = ".".join(str(part) for part in err["loc"]
                   if not str(part).startswith(("function-", "literal[", "constrained-", "tuple[")))
    if err["type"] == "extra_forbidden":
        return f"unknown key {loc!r}"
    if err["type"] == "missing":
        return f"missing key {loc!r}"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def validate(model: type[BaseModel], data, path: Path, data_root=None):
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        line = _line_of(data_root if data_root is not None else data, err["loc"])
        raise SpecError(f"{path}:{line}: {describe_error(err)}") from None

