"""`python -m conformance lint PATH --from torch --to paddle`: the code patterns whose meaning changes when the
model is ported from one framework to the other, read statically (Python's ast: no framework is imported, no
code runs). Each rule matches a pattern and names the variants of the reference semantics that decide its
meaning (oracle/variants/); a match is reported where the two rooms' profiles (known.yaml) differ on one of
them: one holds it, in some version, and the other does not. Each report names the variant, what it does, where
it holds, and its upstream page (or its confirming snippet, where no page states it).

Exit status: 0 nothing found; 1 patterns found; 2 bad input (an unknown framework, a path that is no Python file
or folder, a file that does not parse: named, the other files still read).
"""
from __future__ import annotations

import ast
import functools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

from .kernel.lines import say
from .oracle.known import KnownVariant, load_known
from .oracle.variants import VARIANTS
from .runners import ROOMS

NAME_PARTS = {"bias", "weight", "gamma", "beta", "norm", "LayerNorm", "layer_norm", "ln", "bn", "kernel", "scale"}


def _name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _keywords(call: ast.Call) -> set[str]:
    return {k.arg for k in call.keywords if k.arg}


def _calls(tree: ast.AST) -> Iterator[ast.Call]:
    return (node for node in ast.walk(tree) if isinstance(node, ast.Call))


def _dropout_positional(tree):
    for call in _calls(tree):
        if _name(call).endswith("Dropout") and call.args and not _keywords(call) & {"p", "rate", "keep_prob"}:
            yield call, f"{_name(call)}({ast.unparse(call.args[0])}): its first positional argument"


def _conv_without(keyword_sets: tuple[str, ...], positional: int, what: str):
    def rule(tree):
        for call in _calls(tree):
            if _name(call) in ("Conv2d", "Conv2D", "Conv") and not _keywords(call) & set(keyword_sets) \
                    and len(call.args) < positional:
                yield call, f"{_name(call)}(...) without {what}"
    return rule


def _built_without(names: tuple[str, ...], keywords: tuple[str, ...], what: str):
    def rule(tree):
        for call in _calls(tree):
            if _name(call) in names and not _keywords(call) & set(keywords):
                yield call, f"{_name(call)}(...) without {what}"
    return rule


CONTAINERS = {"list", "tuple", "dict", "List", "Tuple", "Dict", "Sequence"}


def _plain_parameters(function: ast.FunctionDef) -> set[str]:
    """The parameters annotated as a plain list, tuple or dict (`layers: list`, `blocks: List[nn.Module]`)."""
    out = set()
    for arg in function.args.args + function.args.kwonlyargs:
        note = arg.annotation.value if isinstance(arg.annotation, ast.Subscript) else arg.annotation
        if isinstance(note, (ast.Name, ast.Attribute)) and getattr(note, "id", getattr(note, "attr", "")) in CONTAINERS:
            out.add(arg.arg)
    return out


def _layers_in_plain_containers(tree):
    """self.x = [Layer(...), ...] (or a comprehension of calls, a dict or tuple of them), self.x.append(Layer(...)),
    self.x = a parameter annotated as a plain list, tuple or dict."""
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        plain = _plain_parameters(function)
        for node in ast.walk(function):
            if plain and isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in plain:
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == "self":
                        yield node, f"self.{target.attr} = {node.value.id}, a plain container of layers handed in"
    for node in ast.walk(tree):
        held_by = [t for t in getattr(node, "targets", ()) if isinstance(t, ast.Attribute)
                   and isinstance(t.value, ast.Name) and t.value.id == "self"] if isinstance(node, ast.Assign) else []
        if held_by:
            value = node.value
            held = value.elts if isinstance(value, (ast.List, ast.Tuple)) else value.values \
                if isinstance(value, ast.Dict) else [value.elt] if isinstance(value, ast.ListComp) else []
            if any(isinstance(v, ast.Call) and _name(v)[:1].isupper() for v in held):
                yield node, f"self.{held_by[0].attr} = a plain {type(value).__name__.lower()} of layers"
        elif isinstance(node, ast.Call) and _name(node) == "append" and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Attribute) and isinstance(node.func.value.value, ast.Name) \
                and node.func.value.value.id == "self" and node.args and isinstance(node.args[0], ast.Call) \
                and _name(node.args[0])[:1].isupper():
            yield node, f"self.{node.func.value.attr}.append({_name(node.args[0])}(...)) into a plain list"


def _decay_filter_by_name(tree):
    """A test of a parameter's name for a part ("bias" in name, name.endswith("bias")): what a decay filter asks."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and node.left.value in NAME_PARTS \
                and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            yield node, f"{ast.unparse(node)}: a test of a parameter's name"
        elif isinstance(node, ast.Call) and _name(node) in ("endswith", "startswith") and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in NAME_PARTS:
            yield node, f"{ast.unparse(node)}: a test of a parameter's name"


@dataclass(frozen=True)
class Rule:
    name: str
    variants: tuple[str, ...]  # the variants that decide what the pattern means
    match: Callable


RULES = (
    Rule("dropout-positional", ("dropout-positional-is-keep-prob",), _dropout_positional),
    Rule("conv-default-padding", ("conv-default-pads-same",),
         _conv_without(("padding", "pad_mode"), 5, "padding")),
    Rule("conv-default-bias", ("conv-default-no-bias",),
         _conv_without(("bias", "has_bias", "use_bias", "bias_attr"), 8, "saying whether it has a bias")),
    Rule("layers-in-plain-container", ("plain-containers-unregistered", "plain-contained-layers-stay-train",
                                       "plain-contained-layers-stay-eval"), _layers_in_plain_containers),
    Rule("decay-filter-by-name", ("decay-filter-sees-gamma-beta", "decay-filter-sees-weight-names-only",
                                  "decay-filter-sees-scoped-weight-names", "decay-filter-sees-flax-paths",
                                  "decay-fun-sees-generated-names", "no-decay-for-beta-gamma"), _decay_filter_by_name),
    Rule("batchnorm-default-momentum", ("bn-default-momentum-0.99",),
         _built_without(("BatchNorm1d", "BatchNorm2d", "BatchNorm1D", "BatchNorm2D", "BatchNormalization",
                         "BatchNorm"), ("momentum",), "momentum")),
    Rule("batchnorm-default-epsilon", ("norm-default-eps-1e-3",),
         _built_without(("BatchNorm1d", "BatchNorm2d", "BatchNorm1D", "BatchNorm2D", "BatchNormalization",
                         "BatchNorm"), ("eps", "epsilon"), "epsilon")),
    Rule("layernorm-default-epsilon", ("norm-default-eps-1e-3", "layernorm-default-eps-1e-7",
                                       "layernorm-default-eps-1e-6"),
         _built_without(("LayerNorm", "LayerNormalization"), ("eps", "epsilon"), "epsilon")),
    Rule("adamw-default-decay", ("adamw-default-decay-0", "adamw-default-decay-0.004", "adamw-default-decay-0.0001"),
         _built_without(("AdamW", "adamw"), ("weight_decay",), "weight_decay")),
    Rule("cross-entropy-defaults", ("ce-default-takes-probabilities", "ce-default-ignores-no-label"),
         _built_without(("CrossEntropyLoss", "SparseCategoricalCrossentropy", "SoftmaxCrossEntropyWithLogits"),
                        ("from_logits", "ignore_index"), "from_logits or ignore_index")),
)


@dataclass
class Match:
    path: str
    line: int
    rule: str
    pattern: str
    variant: str
    holds_in: str      # "paddle (>=2.6.2; backends to_static), not torch": which of the two holds it, where
    behaviour: str
    source: str        # its upstream page, or the snippet that confirms it


def _scope(entries: list[KnownVariant]) -> str:
    """Where a room's entries for one variant hold: " (>=2.6.2; backends to_static | <2.6)", empty for everywhere."""
    scopes = []
    for entry in entries:
        parts = [entry.versions] if entry.versions else []
        parts += [f"{key} {', '.join(values)}" for key, values in entry.scope().items() if key != "versions" and values]
        scopes.append("; ".join(parts) or "every version and run")
    return f" ({' | '.join(scopes)})"


@functools.lru_cache(maxsize=None)
def _known(framework: str) -> tuple[KnownVariant, ...]:
    """The room's known.yaml, read once per process (a folder of files asks for it per file and rule)."""
    return tuple(load_known(framework))


def differing(source: str, target: str, variants: tuple[str, ...]) -> list[tuple[str, str, list[KnownVariant]]]:
    """(variant, framework that holds it, its entries) for each of these variants that one of the two rooms holds,
    in some version and run, and the other never does."""
    held = {fw: {} for fw in (source, target)}
    for fw in held:
        for entry in _known(fw):
            held[fw].setdefault(entry.variant, []).append(entry)
    out = []
    for name in variants:
        have = [fw for fw in (target, source) if name in held[fw]]
        if len(have) == 1:
            out.append((name, have[0], held[have[0]][name]))
    return out


def lint_source(text: str, path: str, source: str, target: str) -> list[Match]:
    tree = ast.parse(text, filename=path)
    found = []
    for rule in RULES:
        changed = differing(source, target, rule.variants)
        if not changed:
            continue
        variant, holder, entries = changed[0]
        link = next((str(e.link) for e in entries if e.link), entries[0].snippet)
        for node, pattern in rule.match(tree):
            found.append(Match(path=path, line=node.lineno, rule=rule.name, pattern=pattern, variant=variant,
                               holds_in=f"{holder}{_scope(entries)}, not {source if holder == target else target}",
                               behaviour=VARIANTS[variant].behaviour, source=link))
    return sorted(found, key=lambda m: (m.path, m.line, m.rule))


def cmd_lint(args) -> int:
    from .session import UsageError
    for option, framework in (("--from", args.source), ("--to", args.target)):
        if framework not in ROOMS:
            raise UsageError(f"{option} {framework!r}: choose from {', '.join(ROOMS)}")
    root = Path(args.path)
    if root.is_dir():
        files = sorted(p for p in root.rglob("*.py") if p.is_file())
    elif root.is_file() and root.suffix == ".py":
        files = [root]
    else:
        raise UsageError(f"{root}: no Python file or folder")
    found, bad = [], 0
    for file in files:
        try:
            found += lint_source(file.read_text(encoding="utf-8", errors="replace"), str(file), args.source, args.target)
        except (SyntaxError, ValueError) as exc:  # ValueError: a null byte in the source
            say(f"error: {file}: does not parse ({getattr(exc, 'msg', exc)}, line {getattr(exc, 'lineno', '?')})")
            bad += 1
    if args.json:
        say(json.dumps([asdict(m) for m in found], indent=1))
    else:
        for m in found:
            say(f"{m.path}:{m.line}: {m.rule}: {m.pattern}: {m.variant} holds in {m.holds_in}: {m.behaviour} "
                f"[{m.source}]")
        say(f"{len(found)} pattern(s) whose meaning changes from {args.source} to {args.target} in {len(files)} file(s)")
    return 2 if bad else 1 if found else 0


def add_parser(sub) -> None:
    p = sub.add_parser("lint", help="the code patterns whose meaning changes when ported from one framework to another")
    p.add_argument("path", help="a Python file, or a folder read recursively")
    p.add_argument("--from", dest="source", required=True, help="the framework the code is written for")
    p.add_argument("--to", dest="target", required=True, help="the framework it is ported to")
    p.add_argument("--json", action="store_true", help="the matches as one JSON list")
