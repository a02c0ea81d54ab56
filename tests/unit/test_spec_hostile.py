"""Hostile spec files: each is refused with a one-line SpecError naming the file (and line), never a crash,
an endless read or an exhausted memory."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import conformance
from conformance.oracle.known import RUNNERS_DIR
from conformance.spec import SPEC_DIR, SpecError, load_spec, load_yaml, safe_yaml

from test_schema import GOOD, error_of, write_spec

CASE_LINE = ":3:"   # the line of `- id: tiny` in GOOD
MODEL = "    model:\n"


def with_case_keys(text):
    """GOOD with extra case-level YAML inserted before `model:`."""
    return GOOD.replace(MODEL, text + MODEL, 1)


# ---------------------------------------------------------------- files that are not small regular files
def load_in_subprocess(spec_dir):
    """load_spec in a child with a memory cap and a timeout, so a reader that loops or hoards fails the test
    instead of hanging or exhausting the suite."""
    code = ("import sys\nfrom conformance.spec import SpecError, load_spec\n"
            "try:\n    load_spec(sys.argv[1])\nexcept SpecError as exc:\n    print('SpecError:', exc)\n")

    def cap_memory():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = {**os.environ, "PYTHONPATH": str(Path(conformance.__file__).parents[1])}
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(spec_dir)], capture_output=True, text=True,
                              env=env, timeout=60, preexec_fn=cap_memory)
    except subprocess.TimeoutExpired:
        pytest.fail("loading the spec did not finish")
    return proc.stdout.strip() + proc.stderr.strip()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe.yaml")
    out = load_in_subprocess(tmp_path)
    assert out == f"SpecError: {tmp_path / 'pipe.yaml'}: not a regular file"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_device_is_refused(tmp_path):
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    out = load_in_subprocess(tmp_path)
    assert out == f"SpecError: {tmp_path / 'zero.yaml'}: not a regular file"


def test_oversized_file_is_refused(tmp_path):
    padding = ("# " + "x" * 98 + "\n") * 11000  # 1.1 MB of comments: valid YAML, too large
    msg = error_of(tmp_path, GOOD + padding)
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}: ") and "larger than 1024 KiB" in msg


# ---------------------------------------------------------------- YAML structure
def test_deep_nesting_is_refused(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("title: A tiny case", "title: " + "[" * 300 + "]" * 300))
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:4: ") and "nested more than 64 levels" in msg


def test_nesting_under_the_limit_reaches_validation(tmp_path):
    text = with_case_keys("    variants:\n      v: {model.frozen: " + "[" * 50 + "]" * 50 + "}\n")
    with pytest.raises(SpecError, match="model.frozen"):  # nesting is fine; the value is not a name list
        load_spec(write_spec(tmp_path, text))


@pytest.mark.parametrize("key", ["? [a]\n    : 1", "{[a]: 1}: 1", "? {a: 1}\n    : 1"])
def test_list_or_mapping_key_is_refused(tmp_path, key):
    msg = error_of(tmp_path, GOOD.replace("    title: A tiny case", f"    {key}\n    title: A tiny case"))
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:4: ") and "mapping key must be a plain value" in msg


def test_alias_bomb_is_refused(tmp_path):
    # each anchor doubles the one before: thirty of them would make a billion strings
    bomb = "[&a0 [sgd, sgd], &a1 [*a0, *a0], &a2 [*a1, *a1]]"
    msg = error_of(tmp_path, with_case_keys(f"    variants:\n      v:\n        x: {bomb}\n"))
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:8: ") and "alias *a0 refers to a list or mapping" in msg


def test_alias_of_a_mapping_is_refused(tmp_path):
    text = with_case_keys("    variants:\n      v: &same {model.frozen: [a]}\n      w: *same\n")
    msg = error_of(tmp_path, text)
    assert ":8:" in msg and "alias *same" in msg


def test_alias_of_a_plain_value_loads(tmp_path):
    text = with_case_keys("    clear: &z zeros\n    matrix: {clear: [none, *z]}\n")
    instances = load_spec(write_spec(tmp_path, text))
    assert [i.id for i in instances] == ["tiny[none]", "tiny[zeros]"]


def test_shipped_files_load():
    # runners/tensorflow/known.yaml shares reason strings through anchors
    for path in [*SPEC_DIR.glob("*.yaml"), *RUNNERS_DIR.glob("*/known.yaml")]:
        assert load_yaml(path)


@pytest.mark.parametrize("value", ["!!map abc", "!!seq abc", "!!float x", "!!python/name:os.system"])
def test_yaml_tags_are_refused(tmp_path, value):
    msg = error_of(tmp_path, GOOD.replace("title: A tiny case", f"title: {value}"))
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:4: ") and "YAML tags are not allowed" in msg


@pytest.mark.parametrize("value", ["0b_", "-0x_", "2001-13-45", "2001-02-30 12:00:00"])
def test_malformed_typed_scalar_is_refused(tmp_path, value):
    msg = error_of(tmp_path, GOOD.replace("title: A tiny case", f"title: {value}"))
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:4: invalid value: ")


# ---------------------------------------------------------------- matrix expansion
def matrix(n_optimizers, n_clears):
    """A matrix of distinct (and invalid) names: only counting can refuse it before the first instance."""
    optimizers = ", ".join(f"o{i}" for i in range(n_optimizers))
    clears = ", ".join(f"c{i}" for i in range(n_clears))
    return f"    matrix: {{optimizer: [{optimizers}], clear: [{clears}]}}\n"


def test_case_with_too_many_instances(tmp_path):
    msg = error_of(tmp_path, with_case_keys(matrix(40, 26)))  # 1040 instances
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}{CASE_LINE} ") and "1040 instances; at most 1000" in msg


def test_spec_with_too_many_instances(tmp_path):
    # 21 cases of 1000 instances each; 3.6 KB of such matrices once made 10 million
    case = with_case_keys(matrix(40, 25)).split("cases:\n")[1]
    text = "topic: gradient_flow\ncases:\n" + "".join(case.replace("id: tiny", f"id: tiny-{i}") for i in range(21))
    msg = error_of(tmp_path, text)
    line = 3 + 20 * case.count("\n")
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:{line}: ") and "over 20000 instances" in msg


def test_duplicate_matrix_value(tmp_path):
    text = with_case_keys("    matrix:\n      clear: [none, zeros]\n      optimizer: [sgd, adam, sgd]\n")
    msg = error_of(tmp_path, text)
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:8: ") and "duplicate value 'sgd'" in msg


def test_empty_matrix_axis(tmp_path):
    msg = error_of(tmp_path, with_case_keys("    matrix: {optimizer: []}\n"))
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:6: ") and "matrix.optimizer" in msg


# ---------------------------------------------------------------- values out of range
@pytest.mark.parametrize("value", [".inf", "1.0e+308", "1e308", ".nan", "3601"])
def test_timeout_out_of_range(tmp_path, value):
    msg = error_of(tmp_path, with_case_keys(f"    timeout: {value}\n"))
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:6: cases.0.timeout: ")


def test_timeout_in_range_loads(tmp_path):
    (instance,) = load_spec(write_spec(tmp_path, with_case_keys("    timeout: 3600\n")))
    assert instance.case.timeout == 3600


OPTIMIZER = "optimizer: {name: sgd}"


@pytest.mark.parametrize("old, new, field", [
    (OPTIMIZER, "optimizer: {name: sgd, lr: -0.1}", "optimizer.lr"),
    (OPTIMIZER, "optimizer: {name: sgd, lr: .nan}", "optimizer.lr"),
    (OPTIMIZER, "optimizer: {name: sgd, weight_decay: -0.01}", "optimizer.weight_decay"),
    (OPTIMIZER, "optimizer: {name: sgd, weight_decay: .inf}", "optimizer.weight_decay"),
    (OPTIMIZER, "optimizer: {name: momentum, momentum: 1.0}", "optimizer.momentum"),
    (OPTIMIZER, "optimizer: {name: momentum, momentum: -0.5}", "optimizer.momentum"),
    (OPTIMIZER, "optimizer: {name: adam, betas: [1.0, 0.999]}", "optimizer.betas.0"),
    (OPTIMIZER, "optimizer: {name: adam, betas: [0.9, .nan]}", "optimizer.betas.1"),
    (OPTIMIZER, "optimizer: {name: adam, eps: -1.0e-8}", "optimizer.eps"),
    (OPTIMIZER, "optimizer: {name: adam, eps: 0}", "optimizer.eps"),
    (OPTIMIZER, "optimizer: {name: sgd, regularizers: {a.weight: -1}}", "optimizer.regularizers.a.weight"),
    (OPTIMIZER, "optimizer: {name: sgd, clip_global_norm: -1}", "optimizer.clip_global_norm"),
    (OPTIMIZER, "optimizer: {name: sgd, clip_global_norm: .inf}", "optimizer.clip_global_norm"),
    (OPTIMIZER, OPTIMIZER + "\n    tolerance: {rtol: -1.0e-4}", "tolerance.rtol"),
    (OPTIMIZER, OPTIMIZER + "\n    tolerance: {atol: .nan}", "tolerance.atol"),
    (OPTIMIZER, OPTIMIZER + "\n    seed: -1", "seed"),
])
def test_nonsense_hyperparameter(tmp_path, old, new, field):
    msg = error_of(tmp_path, GOOD.replace(old, new))
    line = 10 if "\n" in new else 9
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:{line}: cases.0.{field}: ")


@pytest.mark.parametrize("layer, field", [
    ("{batchnorm: 2, momentum: 1.5}", "momentum"), ("{batchnorm: 2, momentum: -0.1}", "momentum"),
    ("{batchnorm: 2, eps: 0}", "eps"), ("{batchnorm: 2, eps: -1.0e-5}", "eps"), ("{batchnorm: 2, eps: .nan}", "eps"),
])
def test_nonsense_batchnorm(tmp_path, layer, field):
    msg = error_of(tmp_path, GOOD.replace("{linear: [2, 2]}", "{linear: [2, 2]}\n        bn: " + layer))
    assert msg.startswith(f"{tmp_path / 'topic.yaml'}:9: cases.0.model.layers.bn.{field}: ")


def test_batchnorm_momentum_one_loads(tmp_path):
    text = GOOD.replace("{linear: [2, 2]}", "{linear: [2, 2]}\n        bn: {batchnorm: 2, momentum: 1, eps: 1.0e-3}")
    (instance,) = load_spec(write_spec(tmp_path, text))
    assert instance.case.model.layers["bn"].momentum == 1


def test_nonsense_value_set_by_a_variant(tmp_path):
    msg = error_of(tmp_path, with_case_keys("    variants:\n      bad: {optimizer.eps: -1}\n"))
    assert msg.startswith("topic.yaml:3: tiny[bad]: optimizer.eps: ")


def test_a_key_with_a_line_break_still_gives_one_line(tmp_path):
    text = GOOD.replace("optimizer: {name: sgd", 'optimizer: {regularizers: {"a.\\nweight": x}, name: sgd')
    assert text != GOOD
    message = error_of(tmp_path, text)  # error_of asserts one line
    assert "regularizers.a.\\nweight" in message


@pytest.mark.parametrize("layers, path, needle", [
    ("{linear: [2, 2]}\n        e: {embedding: [5, 2]}", "[a, e]", "embedding 'e' must be the first layer of a path"),
    ("{linear: [2, 2]}\n        e: {embedding: [5, 2], padding_idx: 5}", "[e, a]", "'padding_idx' needs an embedding layer with more rows"),
    ("{linear: [2, 2]}\n        e: {linear: [2, 2], padding_idx: 0}", "[e, a]", "'padding_idx' needs an embedding layer"),
    ("{linear: [2, 2]}\n        n: {layernorm: 2, momentum: default}", "[a, n]", "layer 'n': 'momentum' is a BatchNorm setting"),
    ("{linear: [2, 2]}\n        n: {linear: [2, 2], eps: default}", "[a, n]", "layer 'n': 'eps' is a BatchNorm / LayerNorm setting"),
])
def test_misplaced_layer_settings(tmp_path, layers, path, needle):
    text = GOOD.replace("{linear: [2, 2]}", layers).replace("{path: [a]}", "{path: " + path + "}")
    msg = error_of(tmp_path, text)
    assert needle in msg and "\n" not in msg


@pytest.mark.parametrize("optimizer, needle", [
    ("{name: sgd, clip_norm: 1, clip_global_norm: 1}", "'clip_global_norm' and 'clip_norm' exclude each other"),
    ("{name: sgd, no_clip: [a.bias]}", "'no_clip' needs 'clip_global_norm' or 'clip_norm'"),
    ("{name: sgd, no_decay: [a.nothing]}", "unknown parameter 'a.nothing'"),
    ("{name: sgd, lr: defualt}", "optimizer.lr"),
    ("{name: sgd, no_decay_names: [bias], no_decay: [a.bias]}", "'no_decay_names' excludes by name alone"),
    ("{name: sgd, no_decay_names: ['b.*s']}", "no_decay_names.0"),
])
def test_bad_optimizer_settings(tmp_path, optimizer, needle):
    msg = error_of(tmp_path, GOOD.replace("{name: sgd}", optimizer))
    assert needle in msg and "\n" not in msg


def test_freeze_names_must_exist(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("{path: [a]}", "{path: [a], freeze: [b]}"))
    assert "unknown layer or parameter 'b' in 'steps.0.freeze'" in msg


def test_no_reference_check_after_a_train_mode_dropout(tmp_path):
    text = GOOD.replace("{linear: [2, 2]}", "{linear: [2, 2]}\n        d: {dropout: 0.5}").replace(
        "{path: [a]}", "{path: [a, d], repeat: 2}").replace("{step: 0, grad: {a.weight: nonzero}}",
                                                            "{step: 1, value: {a.weight: reference}}")
    msg = error_of(tmp_path, text)
    assert "'value a.weight: reference' at step 1: step 0 runs a dropout in train mode" in msg and "\n" not in msg
    fine = text.replace("{step: 1, value: {a.weight: reference}}", "{step: 1, value: {a.weight: changed}}")
    assert load_spec(write_spec(tmp_path, fine))


def test_an_empty_path_is_refused_with_one_line(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("{path: [a]}", "{path: []}"))
    assert "steps.0.path" in msg and "at least 1" in msg and "\n" not in msg


@pytest.mark.parametrize("change, needle", [
    (("{linear: [2, 2]}", "{linear: [2, 2], init: default}"), "no oracle value matches one by one"),
    (("{step: 0, grad: {a.weight: nonzero}}", "{initial: {a.weight: reference}}"), "'initial' checks look at layers with 'init: default'"),
])
def test_init_default_checks(tmp_path, change, needle):
    text = GOOD.replace("{step: 0, grad: {a.weight: nonzero}}", "{step: 0, grad: {a.weight: reference}}") \
        if "init" in change[1] and "linear" in change[1] else GOOD
    msg = error_of(tmp_path, text.replace(*change))
    assert needle in msg and "\n" not in msg


def test_a_raises_check_needs_its_step(tmp_path):
    msg = error_of(tmp_path, GOOD.replace("{step: 0, grad: {a.weight: nonzero}}", "{raises: true}"))
    assert "'raises' and 'agree' checks need 'step'" in msg and "\n" not in msg


# ---------------------------------------------------------------- libyaml's fast path
def shape(data):
    """Data with the line numbers the loaders attach, for comparing two loads."""
    if isinstance(data, dict):
        return data.line, data.key_lines, {k: shape(v) for k, v in data.items()}
    if isinstance(data, list):
        return data.line, data.item_lines, [shape(v) for v in data]
    return type(data), data


@pytest.mark.skipif(safe_yaml._CParser is None, reason="this PyYAML has no libyaml")
@pytest.mark.parametrize("path", sorted({*Path(conformance.__file__).parent.rglob("*.yaml"),
                                         *(Path(conformance.__file__).parents[1] / "examples").rglob("*.yaml")}),
                         ids=str)
def test_libyaml_loads_every_shipped_file_as_the_python_loader_does(path):
    text = path.read_text(encoding="utf-8")
    assert safe_yaml._plain(text), "a shipped file should take the fast path"
    assert shape(safe_yaml._load(safe_yaml._FastLoader, text, path)) == shape(
        safe_yaml._load(safe_yaml._Loader, text, path))


@pytest.mark.parametrize("text", ["a: &x 1\nb: *x\n", "a: !!str 1\n", "[" * 70 + "]" * 70, "a: [1\n"])
def test_what_is_not_plain_goes_to_the_python_loader(text):
    assert not safe_yaml._plain(text)
