"""Property-based fuzzing of the spec loader: whatever the file holds, the only failure is SpecError."""
import copy

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.oracle.known import load_known
from conformance.spec import SpecError, load_spec

GOOD = {
    "topic": "weight_decay",
    "cases": [{
        "id": "fuzz", "title": "t", "references": ["https://example.org/a"],
        "matrix": {"optimizer": ["sgd", "adam"]},
        "variants": {"v": {"model.frozen": ["a"]}},
        "model": {"layers": {"a": {"linear": [2, 2]}, "bn": {"batchnorm": 2}, "t": {"tie": "a"}},
                  "container": "plain_list", "contained": ["a"], "detach_after": ["a"]},
        "optimizer": {"name": "sgd", "weight_decay": 0.1, "params": "all", "regularizers": {"a.weight": 0.1}},
        "steps": [{"path": ["a", "bn"], "repeat": 2}],
        "expect": [{"step": "all", "grad": {"a.weight": "none"}, "when": {"optimizer": "sgd"}},
                   {"in_optimizer": {"a.bias": 1}}],
    }],
}

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                    st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=12)


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, child in node.items():
            yield from paths(child, prefix + (key,))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from paths(child, prefix + (index,))


ALL_PATHS = list(paths(GOOD))[1:]


def loads_or_spec_error(tmp_path, text):
    (tmp_path / "fuzz.yaml").write_text(text, encoding="utf-8")
    try:
        load_spec(tmp_path)
    except SpecError as exc:
        assert "\n" not in str(exc)


settings.register_profile("spec", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture])


@settings.get_profile("spec")
@given(st.text(max_size=300))
def test_arbitrary_text(tmp_path, text):
    loads_or_spec_error(tmp_path, text)


@settings.get_profile("spec")
@given(st.sampled_from(ALL_PATHS), values, st.booleans())
def test_one_value_replaced_or_removed(tmp_path, path, value, remove):
    doc = copy.deepcopy(GOOD)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if remove:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    loads_or_spec_error(tmp_path, yaml.safe_dump(doc, allow_unicode=True))


@settings.get_profile("spec")
@given(values)
def test_known_file_fuzz(tmp_path, value):
    (tmp_path / "fw").mkdir(exist_ok=True)
    (tmp_path / "fw" / "known.yaml").write_text(yaml.safe_dump({"divergences": value}), encoding="utf-8")
    try:
        load_known("fw", tmp_path)
    except SpecError as exc:
        assert "\n" not in str(exc)


# Raw YAML that a value of a dumped document cannot express: deep nesting, aliases, complex keys, tags.
fragments = st.one_of(
    st.integers(0, 300).map(lambda n: "[" * n + "]" * n),
    st.integers(0, 300).map(lambda n: "{a: " * n + "1" + "}" * n),
    st.sampled_from(["{[a]: 1}", "{{a: 1}: 1}", "[&x [1, 2], *x, *x]", "[&x a, *x, *x]", "&r [*r]", "*nowhere",
                     "{<<: {a: 1}}", "!!float x", "!!seq a", "!!map [a]", "!!set {a}", "0b_", "2001-13-45",
                     ".nan", "-.inf", "1.0e+400"]),
)


@settings.get_profile("spec")
@given(st.sampled_from(ALL_PATHS), fragments, st.booleans())
def test_hostile_fragment(tmp_path, path, fragment, as_key):
    doc = copy.deepcopy(GOOD)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if as_key and isinstance(parent, dict):
        parent["FRAGMENT"] = parent.pop(path[-1])
    else:
        parent[path[-1]] = "FRAGMENT"
    loads_or_spec_error(tmp_path, yaml.safe_dump(doc).replace("FRAGMENT", fragment))
