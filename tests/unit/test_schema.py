"""Spec loading: every malformed input is a one-line SpecError naming file and line."""
import textwrap

import pytest

from conformance.oracle.known import RUNNERS_DIR, load_known, profile
from conformance.run import Run
from conformance.runners import ROOMS
from conformance.spec import SPEC_DIR, TOPICS, SpecError, load_spec

GOOD = """\
topic: gradient_flow
cases:
  - id: tiny
    title: A tiny case
    references: [https://example.org/doc]
    model:
      layers:
        a: {linear: [2, 2]}
    optimizer: {name: sgd}
    steps:
      - {path: [a]}
    expect:
      - {step: 0, grad: {a.weight: nonzero}}
"""


def write_spec(tmp_path, text, name="topic.yaml"):
    (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def error_of(tmp_path, text):
    with pytest.raises(SpecError) as info:
        load_spec(write_spec(tmp_path, text))
    message = str(info.value)
    assert "\n" not in message
    return message


def test_good_spec_loads(tmp_path):
    (instance,) = load_spec(write_spec(tmp_path, GOOD))
    assert instance.id == "tiny" and instance.topic == "gradient_flow"
    assert instance.source == "topic.yaml:3"


def test_unknown_key_names_file_and_line(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("    title:", "    titel: typo\n    title:"))
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:4:") and "unknown key" in msg and "titel" in msg


def test_nested_unknown_key_line(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("optimizer: {name: sgd}", "optimizer: {name: sgd, lr_rate: 1}"))
    assert ":9:" in msg and "lr_rate" in msg


def test_bad_type_names_line(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("{linear: [2, 2]}", "{linear: [2, many]}"))
    assert ":8:" in msg and "linear" in msg


def test_bad_enum_value(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("nonzero", "nonzeroish"))
    assert ":13:" in msg and "grad" in msg


def test_duplicate_case_id(tmp_path):
    second = GOOD.split("cases:\n")[1]
    msg = error_of(tmp_path, GOOD + second)
    assert ":14:" in msg and "duplicate case id 'tiny'" in msg and "topic.yaml:3" in msg


def test_duplicate_yaml_key(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("    title: A tiny case\n", "    title: A\n    title: B\n"))
    assert ":5:" in msg and "duplicate key 'title'" in msg


def test_missing_reference(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("    references: [https://example.org/doc]\n", ""))
    assert ":3:" in msg and "missing key" in msg and "references" in msg


def test_empty_references(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("[https://example.org/doc]", "[]"))
    assert ":5:" in msg and "references" in msg


def test_reference_not_a_url(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("https://example.org/doc", "see the docs"))
    assert ":5:" in msg and "URL" in msg


def test_yaml_syntax_error(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("{name: sgd}", "{name: sgd"))
    assert "topic.yaml:" in msg and "YAML syntax error" in msg


def test_unknown_layer_in_path(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("path: [a]", "path: [a, ghost]"))
    assert ":3:" in msg and "unknown layer 'ghost'" in msg


def test_unknown_parameter_in_expectation(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("a.weight: nonzero", "a.kernel: nonzero"))
    assert "unknown parameter 'a.kernel'" in msg


def test_when_must_name_an_axis(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("nonzero}}", "nonzero}, when: {clear: zeros}}"))
    assert "'when' names 'clear'" in msg


def test_python_tags_are_not_executed(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("title: A tiny case", "title: !!python/object/apply:os.system [echo hi]"))
    assert "topic.yaml" in msg


def test_matrix_and_variants_expand(tmp_path):
    text = GOOD.replace("    model:\n", "    matrix: {optimizer: [sgd, adam], clear: [default, zeros]}\n"
                        "    variants:\n      frozen: {model.frozen: [a]}\n      free: {}\n    model:\n", 1)
    instances = load_spec(write_spec(tmp_path, text))
    assert len(instances) == 8
    first = instances[0]
    assert first.id == "tiny[sgd,default,frozen]" and first.case.model.frozen == ["a"]
    assert first.axes == {"optimizer": "sgd", "clear": "default", "variant": "frozen"}
    assert instances[-1].case.optimizer.name == "adam" and instances[-1].case.clear == "zeros"


def test_variant_with_unknown_field(tmp_path):
    text = GOOD.replace("    model:\n", "    variants:\n      x: {model.nothing.here: 1}\n    model:\n", 1)
    assert "variant 'x' sets unknown field" in error_of(tmp_path, text)


def test_no_spec_files(tmp_path):
    with pytest.raises(SpecError, match="no spec files"):
        load_spec(tmp_path)


ENTRY = "  - variant: {name}\n    versions: '{versions}'\n    reason: r\n    link: {link}\n"


def known_path(tmp_path):
    (tmp_path / "fw").mkdir(exist_ok=True)
    return tmp_path / "fw" / "known.yaml"


def known_file(tmp_path, *entries, snippets=True, **fields):
    """A room "fw" in tmp_path with these known.yaml entries and, with `snippets`, a confirm snippet for each."""
    defaults = dict(name="bn-running-var-biased", versions="", link="https://e.org")
    entries = [{**defaults, **fields, **e} for e in entries or [{}]]
    known_path(tmp_path).write_text("variants:\n" + "".join(ENTRY.format(**e) for e in entries))
    (tmp_path / "fw" / "confirm").mkdir(exist_ok=True)
    for e in entries if snippets else []:
        (tmp_path / "fw" / "confirm" / (e["name"].replace("-", "_").replace(".", "_") + ".py")).write_text("")


@pytest.mark.parametrize("fields, message", [
    (dict(name="no-such-variant"), r"fw/known.yaml:2: .*unknown variant 'no-such-variant'"),
    (dict(link="not a url"), r"fw/known.yaml:5: .*URL"),
    (dict(versions=">>2"), r"fw/known.yaml:3: .*invalid version specifier"),
])
def test_known_file_errors_name_file_and_line(tmp_path, fields, message):
    known_file(tmp_path, **fields)
    with pytest.raises(SpecError, match=message):
        load_known("fw", tmp_path)


def test_known_file_has_no_patterns_and_lists_a_variant_once(tmp_path):
    known_path(tmp_path).write_text("variants:\n  - {variant: bn-running-var-biased, case: '*', reason: r, "
                                      "link: null}\n")
    with pytest.raises(SpecError, match="unknown key 'variants.0.case'"):
        load_known("fw", tmp_path)
    known_file(tmp_path, {}, {})
    with pytest.raises(SpecError, match="listed twice with the same scope"):
        load_known("fw", tmp_path)
    known_file(tmp_path, dict(versions=">=3"), dict(versions="<3"))  # again for other runs
    assert [v.versions for v in load_known("fw", tmp_path)] == [">=3", "<3"]


def test_profile_by_version(tmp_path):
    known_file(tmp_path, dict(name="bn-running-var-biased", versions=">=2"),
               dict(name="adam-epsilon-hat", versions="", link="null"))
    variants = load_known("fw", tmp_path)
    assert variants[1].link is None
    names = lambda version: [v.variant for v in profile(variants, Run("fw", version))]
    assert names("2.13.0+cpu") == ["bn-running-var-biased", "adam-epsilon-hat"]
    assert names("1.9") == ["adam-epsilon-hat"]
    assert names("not-a-version") == ["adam-epsilon-hat"]


def test_a_variant_without_its_snippet_is_refused(tmp_path):
    known_file(tmp_path, dict(name="momentum-default-0.9"), snippets=False)
    with pytest.raises(SpecError, match=r"fw/known.yaml:2: variant 'momentum-default-0.9' has no confirming "
                                        r"snippet .*fw/confirm/momentum_default_0_9.py"):
        load_known("fw", tmp_path)


def test_shipped_known_files_are_valid_and_their_snippets_exist():
    root = RUNNERS_DIR.parent.parent
    for framework in ROOMS:
        variants = load_known(framework)
        assert variants, framework
        for v in variants:
            assert (root / v.snippet).is_file(), (framework, v.snippet)
            assert v.snippet.startswith(f"conformance/runners/{framework}/confirm/")


def test_shipped_spec_is_valid_and_complete():
    instances = load_spec(SPEC_DIR)
    base = {i.case.id for i in instances}
    assert len(base) >= 30
    assert {"seed-1-decay-moves-unused-layer", "seed-2-plain-list-sublayers", "seed-3-stop-gradient-vs-frozen",
            "seed-4-bn-stats-not-regularized", "seed-5-unused-bn-grad"} <= base
    topics = {i.topic for i in instances}
    assert topics == set(TOPICS)
    assert instances[0].topic == "seeds"


@pytest.mark.parametrize("edit, message", [
    (("{linear: [2, 2]}", "{linear: [2, 2]}\n        n: {layernorm: 2, bias: false}"), "'bias' is a setting of linear and conv2d"),
    (("{linear: [2, 2]}", "{linear: [2, 2], positional: true}"), "'positional' writes a dropout's rate"),
    (("{linear: [2, 2]}", "{linear: [2, 2], padding: default}"), "'padding' is a setting of conv2d layers, not of linear"),
    (("{linear: [2, 2]}", "{linear: [2, 2]}\n        c: {conv2d: [1, 1, 3], padding: valid}"), "padding"),
    (("{linear: [2, 2]}\n", "{linear: [2, 2]}\n        c: {conv2d: [1, 1, 3], padding: default}\n        d: {linear: [36, 2]}\n"),
     "steps.1: conv2d 'c' leaves its padding to default, so the size of its output is the framework's"),
    (("optimizer: {name: sgd}", "optimizer: {name: sgd}\n    cross_entropy: {}"), "a cross-entropy takes class scores, a vector of 2"),
    (("optimizer: {name: sgd}", "optimizer: {name: sgd}\n    cross_entropy: {ignore_index: 2}"),
     "ignore_index 2 is a class of the 2"),
    (("- {path: [a]}", "- {path: [a], all_padding: true}"), "'all_padding' needs an embedding with a padding_idx"),
    (("optimizer: {name: sgd}", "optimizer: {name: sgd}\n    cross_entropy: {label_smoothing: 1.5}"), "label_smoothing"),
])
def test_loss_padding_bias_and_positional_settings_are_checked(tmp_path, edit, message):
    text = GOOD.replace("{linear: [2, 2]}", "{linear: [2, 1]}") if "class scores" in message else GOOD
    if "steps.1" in message:
        text = text.replace("- {path: [a]}", "- {path: [a]}\n      - {path: [c, d]}")
    assert message in error_of(tmp_path, text.replace(*edit))


def test_a_cross_entropy_case_gets_integer_labels_with_the_ignored_one_first(tmp_path):
    from conformance.engine.scenario import batch
    text = GOOD.replace("optimizer: {name: sgd}", "optimizer: {name: sgd}\n    cross_entropy: {ignore_index: default}")
    (instance,) = load_spec(write_spec(tmp_path, text))
    x, labels = batch(instance.case, 0, ["a"])
    assert labels.dtype.kind == "i" and labels[0] == -100 and set(labels[1:]) <= {0, 1}
    _, labels = batch(instance.case, 0, ["a"], all_padding=True)
    assert (labels == -100).all()


def test_a_tie_names_a_layer(tmp_path):
    text = GOOD.replace("a: {linear: [2, 2]}", "a: {linear: [2, 2]}\n        t: {tie: ''}")
    assert "topic.yaml:9: cases.0.model.layers.t.tie: String should have at least 1 character" in error_of(tmp_path, text)
