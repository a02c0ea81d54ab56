"""The spec: what should happen, as YAML cases (cases/*.yaml) validated by the models in model.py.

safe_yaml.py reads any YAML file the suite takes (hostile input bounded), model.py is the case
vocabulary, layers.py the table of layer kinds, expand.py turns cases into instances.
"""
from .expand import SPEC_DIR, expand, load_spec, smoke, spec_hash
from .model import (DROPOUT_PROBE, PADDING_PROBE, padding_from, FEATURES, TORCH_IGNORE_INDEX, CrossEntropy, OPTIMIZER_FIELDS, TOPICS, Case, ClearMode, Expect, Instance, Layer, Model, Optimizer,
                    Step, defaults_of, expect_steps, features_of, param_names, replica_loss_weights, schedule)
from .safe_yaml import SpecError, load_yaml

__all__ = ["DROPOUT_PROBE", "PADDING_PROBE", "padding_from", "TORCH_IGNORE_INDEX", "CrossEntropy", "FEATURES", "OPTIMIZER_FIELDS", "SPEC_DIR", "smoke", "TOPICS", "Case", "ClearMode", "Expect", "Instance", "Layer",
           "Model", "Optimizer", "SpecError", "Step", "defaults_of", "expand", "expect_steps", "features_of",
           "load_spec", "load_yaml", "param_names", "replica_loss_weights", "schedule", "spec_hash"]
