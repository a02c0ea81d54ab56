"""`python -m conformance lint` (conformance/lint.py): the patterns whose meaning changes between two frameworks,
as the rooms' profiles say, read from the source without importing anything."""
import json

import pytest

from conformance.__main__ import main
from conformance.lint import RULES, lint_source
from conformance.oracle.variants import VARIANTS

MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [nn.Linear(4, 4) for _ in range(3)]
        self.drop = nn.Dropout(0.1)
        self.conv = nn.Conv2d(3, 8, 3)
        self.norm = nn.LayerNorm(8)
        heads = self.heads = (nn.Linear(4, 2), nn.Linear(4, 2))


def groups(model):
    return [p for n, p in model.named_parameters() if "bias" not in n]
'''


def rules(found):
    return {(m.rule, m.line) for m in found}


def test_every_rule_names_variants_of_the_vocabulary():
    assert all(rule.variants and set(rule.variants) <= set(VARIANTS) for rule in RULES)


def test_a_pattern_is_reported_where_the_two_profiles_differ_on_it():
    to_mindspore = rules(lint_source(MODEL, "m.py", "torch", "mindspore"))
    assert ("dropout-positional", 10) in to_mindspore  # Dropout's first argument: keep_prob there
    assert ("dropout-positional", 10) not in rules(lint_source(MODEL, "m.py", "torch", "paddle"))  # p in both
    to_tensorflow = rules(lint_source(MODEL, "m.py", "torch", "tensorflow"))
    assert ("layers-in-plain-container", 9) in to_tensorflow  # Keras tracks a list, torch does not
    assert ("layers-in-plain-container", 9) not in rules(lint_source(MODEL, "m.py", "torch", "paddle"))  # both miss it
    assert ("layers-in-plain-container", 13) in to_tensorflow  # a tuple, self its second target
    assert ("layernorm-default-epsilon", 12) in rules(lint_source(MODEL, "m.py", "torch", "jax"))  # 1e-6 there


def test_a_match_says_which_framework_holds_the_variant_where_and_its_source():
    match = next(m for m in lint_source(MODEL, "m.py", "torch", "mindspore") if m.rule == "dropout-positional")
    assert match.variant == "dropout-positional-is-keep-prob" and match.holds_in.startswith("mindspore (")
    assert match.holds_in.endswith(", not torch") and match.source.startswith("https://")
    assert match.behaviour == VARIANTS[match.variant].behaviour
    back = next(m for m in lint_source(MODEL, "m.py", "mindspore", "torch") if m.rule == "dropout-positional")
    assert back.holds_in.endswith(", not torch")  # the other way round: the same difference


def test_the_command_line_reads_a_folder_and_says_what_it_cannot_parse(tmp_path, capsys):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "broken.py").write_text("def f(:\n")
    (tmp_path / "clean.py").write_text("x = 1\n")
    assert main(["lint", str(tmp_path), "--from", "torch", "--to", "mindspore", "--json"]) == 2
    out = capsys.readouterr().out
    assert "broken.py: does not parse" in out
    found = json.loads(out[out.index("["):])
    assert {m["path"] for m in found} == {str(tmp_path / "model.py")} and all(m["line"] > 0 for m in found)
    assert main(["lint", str(tmp_path / "clean.py"), "--from", "torch", "--to", "mindspore"]) == 0
    assert main(["lint", str(tmp_path / "model.py"), "--from", "torch", "--to", "mindspore"]) == 1


@pytest.mark.parametrize("args, says", [
    (["--from", "torchh", "--to", "paddle"], "--from 'torchh'"),
    (["--from", "torch", "--to", "mxnet"], "--to 'mxnet'"),
])
def test_an_unknown_framework_is_one_line(tmp_path, capsys, args, says):
    (tmp_path / "model.py").write_text(MODEL)
    assert main(["lint", str(tmp_path / "model.py"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]


def test_a_path_that_is_no_python_file_is_one_line(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    assert main(["lint", str(tmp_path / "notes.txt"), "--from", "torch", "--to", "paddle"]) == 2
    assert "no Python file or folder" in capsys.readouterr().err


def test_the_audit_examples_are_linted_as_their_seeds_say(capsys):
    """examples/audit/torch: seed 5's Dropout(0.1) changes meaning on MindSpore, seed 2's plain list of blocks on
    TensorFlow (Keras tracks it), and not on paddle, which misses it as torch does."""
    from conformance.auditor.examples import EXAMPLES_DIR
    torch = EXAMPLES_DIR / "torch"

    def found(target, name):
        return {m.rule for m in lint_source((torch / name).read_text(), name, "torch", target)}
    assert "dropout-positional" in found("mindspore", "seed5_unused_batchnorm.py")
    assert "layers-in-plain-container" in found("tensorflow", "seed2_plain_list_resnet.py")
    assert "layers-in-plain-container" not in found("paddle", "seed2_plain_list_resnet.py")
    assert main(["lint", str(torch), "--from", "torch", "--to", "tensorflow"]) == 1
    assert "seed2_plain_list_resnet.py" in capsys.readouterr().out
