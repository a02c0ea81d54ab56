"""Framework-neutral interpreter of a case's schedule.

`observe` drives any adapter through the case: build, make the optimizer, then per step clear,
forward (+ backward), read gradients, update, read values. The same function runs the reference
oracle and the real frameworks, so both are observed in exactly the same way.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..runners.base import InProcess, Runner, Unsupported
from ..spec import (FEATURES, PADDING_PROBE, Case, defaults_of, expect_steps, features_of, param_names,
                    replica_loss_weights, schedule)


MAX_RAISED = 300  # characters of a step's error that an observation keeps


@dataclass
class StepObservation:
    loss: float
    grads: dict[str, np.ndarray | None]  # after backward, before the update
    values: dict[str, np.ndarray]        # after the update
    raised: str | None = None            # the error a step the case lets raise raised (its loss is then NaN)
    disagree: frozenset[str] = frozenset()  # data parallelism: what some replica holds another value of


@dataclass
class Observation:
    trainable: dict[str, bool]
    optimizer_params: list[str]
    initial: dict[str, np.ndarray]
    steps: list[StepObservation] = field(default_factory=list)
    grads_observed: bool = True  # a framework's trainer keeps its gradients to itself
    decayed: dict[str, bool] | None = None  # per parameter: does the update program decay it (None: no program)
    defaults: dict[str, object] = field(default_factory=dict)  # value used for each setting left to default
    random_from: int | None = None  # the first step whose forward drew a random dropout mask (the oracle's)

    def before(self, step: int) -> dict[str, np.ndarray]:
        return self.initial if step == 0 else self.steps[step - 1].values


def initial_values(case: Case) -> dict[str, np.ndarray]:
    """Deterministic starting values, rounded to float32 so every runner starts identically."""
    rng = np.random.default_rng([case.seed, 1])
    out = {}
    for name in param_names(case.model):
        layer, role = name.split(".")
        spec = case.model.layers[layer]
        width = spec.out_features()
        if role == "weight" and (spec.linear or spec.conv2d):
            fan_in = spec.linear[0] if spec.linear else spec.conv2d[0] * spec.conv2d[2] ** 2
            value = rng.normal(0.0, 1.0 / np.sqrt(fan_in), spec.weight_shape())
        elif spec.embedding:
            value = rng.normal(0.0, 1.0, tuple(spec.embedding))
        elif role == "weight":
            value = 1.0 + 0.1 * rng.normal(size=width)
        elif role == "bias":
            value = 0.1 * rng.normal(size=width)
        else:
            # non-trivial running statistics: eval-mode cases then test their use without a
            # train step first, so they do not depend on the variance estimator of the update
            value = 0.2 * rng.normal(size=width) if role == "running_mean" else 1.0 + 0.5 * rng.random(width)
        out[name] = value.astype(np.float32)
    return out


def batch(case: Case, index: int, path: list[str], size: int | None = None,
          all_padding: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Input and target for one step, fixed by the case seed and the batch index: float32 (images
    as batch x channels x height x width), or for a path that starts with an embedding, int64 row
    indices (one per sample; the padding row first, so every batch looks it up). The target is float32,
    or under a cross-entropy int64 class labels (sample 0 carrying the ignored label, if any). `size`: the
    step's own batch size (default: the case's); `all_padding`: every index the padding row, every label
    the ignored one."""
    rng = np.random.default_rng([case.seed, 2, index])
    first = case.model.spec(path[0])
    shapes = case.model.shapes(path)
    size = size or case.batch_size
    if first.embedding:
        x = rng.integers(0, first.embedding[0], size=size)
        if first.padding_idx is not None:
            x[0] = first.padding_idx
            if all_padding:
                x[:] = first.padding_idx
    else:
        x = rng.normal(size=(size, *shapes[0])).astype(np.float32)
    t = rng.normal(size=(size, *shapes[-1]))
    ce = case.cross_entropy
    if ce is None:
        return x, t.astype(np.float32)
    labels = rng.integers(0, shapes[-1][0], size=size)
    ignored = ce.ignored_label()
    if ignored is not None:
        labels[0] = ignored
        if all_padding:
            labels[:] = ignored
    return x, labels.astype(np.int64)


def _one_line(exc: BaseException) -> str:
    """An error a step raised, as its record shows it: its type and the first line of its message."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first}"[:MAX_RAISED]


def may_raise(case: Case) -> set[int]:
    """The steps whose error is an observation: those a `raises` check looks at."""
    n = len(schedule(case))
    return {i for e in case.expect if e.raises is not None for i in expect_steps(e.step, n)}


def trainer_refusal(case: Case) -> str | None:
    """Why a framework's own trainer cannot run this schedule, or None. A trainer step clears,
    back-propagates and updates together; a step without any of the three is a plain forward."""
    if case.clear != "default":
        return f"clears gradients to {case.clear} explicitly: a trainer clears them its own way"
    if any(not s.reduce for s in case.steps):
        return "back-propagates a loss left per sample: a trainer reduces its loss itself"
    if any(s.touch for s in case.steps):
        return "adds parameters times zero to the loss: a trainer computes its loss itself"
    dp = case.data_parallel
    if dp and (dp.shares or any(s.replica_paths for s in case.steps)):
        return ("gives replicas unequal shares or paths of their own: a trainer splits each batch equally "
                "over replicas of one model")
    for n, step in enumerate(schedule(case)):
        if (step.clear, step.backward, step.update) not in ((True, True, True), (True, False, False)):
            parts = [what for what, on in (("clears", step.clear), ("back-propagates", step.backward),
                                           ("updates", step.update)) if on] or ["runs forward only"]
            return (f"step {n} {' and '.join(parts)} alone: a trainer step clears, back-propagates "
                    f"and updates together")
    return None


def observe(runner: Runner, case: Case) -> Observation:
    lacking = [f for f in features_of(case) if f not in runner.features]
    if lacking:
        raise Unsupported(f"the {runner.framework} adapter does not express {FEATURES[lacking[0]]}")
    dp = case.data_parallel
    # the one place the engine asks what kind of data parallelism a room declares: a runner that drives every
    # replica of a step itself (InProcess), or one rank of a group that observes its own rows (RankGroup)
    in_process = dp is not None and isinstance(runner.parallelism, InProcess)
    replicas = dp.replicas if dp else 1
    if not (in_process and runner.parallelism.any_replicas) and runner.run.replicas != str(replicas):
        raise Unsupported(f"a data-parallel case of {replicas} replicas: it runs with --replicas {replicas}"
                          if replicas > 1 else "a single-process case: it runs in the runs with --replicas 1")
    if dp and runner.parallelism is None:
        raise Unsupported(f"the {runner.framework} room has no data parallelism")
    runner.data_parallel = dp  # before build: the engine's settings (find_unused)
    runner.build(case.model, initial_values(case))
    runner.make_optimizer(case.optimizer)
    trainer = runner.api == "trainer"
    if trainer and (why := trainer_refusal(case)):
        raise Unsupported(why)
    obs = Observation(trainable=runner.trainable(), optimizer_params=runner.optimizer_params(),
                      initial=runner.values(),
                      grads_observed=not trainer and (dp is None or runner.parallelism.grads_readable),
                      defaults=runner.defaults() if defaults_of(case.model, case.optimizer) else {})
    raising = may_raise(case)

    def apart() -> frozenset:  # what replicas the runner drives itself hold other values of (a rank group's: merged)
        return frozenset(runner.disagreeing()) if in_process else frozenset()
    for index, step in enumerate(schedule(case)):
        x, t = batch(case, index if step.batch is None else step.batch, step.path, step.batch_size, step.all_padding)
        path = step.path
        if dp and not in_process:  # one rank of a group: its rows; the framework combines the ranks
            path = step.replica_paths.get(runner.rank, step.path)
            rows = list(dp.rows(len(x))[runner.rank])
            x, t = np.asarray(x)[rows], np.asarray(t)[rows]
        if step.freeze or step.unfreeze:
            runner.set_trainable(step.freeze, False)
            runner.set_trainable(step.unfreeze, True)
        if step.lr is not None:
            runner.set_lr(step.lr)
        # rooms without the feature never see these arguments (a trainer reduces its loss itself)
        loss_fn = {"loss": case.cross_entropy} if case.cross_entropy else {}
        if step.touch:
            loss_fn["touch"] = step.touch
        if not step.sync:
            loss_fn["sync"] = False
        per_sample = {} if step.reduce else {"reduce": False}
        try:
            if trainer and step.update:  # the trainer keeps its gradients to itself
                loss = runner.train_step(path, x, t, train=step.train, **loss_fn)
                grads = dict.fromkeys(obs.initial)
            else:
                if step.clear and not trainer:
                    runner.clear_grads(case.clear)
                if in_process:  # every replica's path over its rows of the global batch
                    shards = [(step.replica_paths.get(r, step.path), rows) for r, rows in enumerate(dp.rows(len(x)))]
                    loss = runner.forward_replicas(shards, x, t, train=step.train, backward=step.backward, **loss_fn)
                else:
                    fused = {"update": True} if step.update and runner.fuses_update else {}
                    loss = runner.forward(path, x, t, train=step.train, backward=step.backward, **per_sample,
                                          **loss_fn, **fused)
                grads = runner.grads() if not trainer else dict.fromkeys(obs.initial)
                if step.update:
                    runner.update()
        except Unsupported:
            raise
        except Exception as exc:
            if index not in raising:
                raise
            # the loop skips the batch: nothing of this step reaches the gradients it reports
            obs.steps.append(StepObservation(loss=float("nan"), grads=dict.fromkeys(obs.initial),
                                             values=runner.values(), raised=_one_line(exc), disagree=apart()))
            continue
        obs.steps.append(StepObservation(loss=loss, grads=grads, values=runner.values(), disagree=apart()))
        if runner.drew_random and obs.random_from is None:
            obs.random_from = index
    obs.decayed = runner.decayed()
    return obs


def merge_replicas(case: Case, replicas: list[Observation]) -> Observation:
    """One observation of a data-parallel case from each rank's, in rank order: rank 0's, with each step's loss the
    global batch's (spec.replica_loss_weights: a summed loss's sum, a mean's mean weighed by rows, as the oracle's
    forward_replicas combines them) and its `disagree` naming what some rank holds another value of than rank 0
    after the step, or what a rank's runner found its replicas' copies disagree on. ValueError if the ranks observed
    different schedules."""
    first = replicas[0]
    if any(type(o) is not Observation or len(o.steps) != len(first.steps) for o in replicas):
        raise ValueError("the ranks observed different numbers of steps")
    weights = replica_loss_weights([len(r) for r in case.data_parallel.rows(case.batch_size)], case.cross_entropy)
    merged = dataclasses.replace(first, steps=[])
    for i, step in enumerate(first.steps):
        loss = sum(w * float(o.steps[i].loss) for w, o in zip(weights, replicas))
        disagree = {name for o in replicas[1:] for name, value in o.steps[i].values.items()
                    if name not in step.values or not np.array_equal(value, step.values[name], equal_nan=True)}
        disagree |= {name for o in replicas for name in o.steps[i].disagree}  # what a rank saw of the others' copies
        merged.steps.append(dataclasses.replace(step, loss=loss, disagree=frozenset(disagree)))
    return merged


# ---------------------------------------------------------------- what an adapter sent
class BadObservation(Exception):
    """An observation is malformed; the message is one line saying what and where."""


def _dict_of(got, names: list[str], what: str, item) -> dict:
    """`got` as a new dict of exactly `names`, each value passed through item(value, label, name)."""
    if type(got) is not dict:
        raise BadObservation(f"{what} is {type(got).__name__}, not a dict")
    missing = [n for n in names if n not in got]
    if missing:
        raise BadObservation(f"{what} lacks {missing[0]!r}")
    known = set(names)
    unknown = [k for k in got if k not in known]
    if unknown:
        raise BadObservation(f"{what} has unknown {unknown[0]!r}")
    return {n: item(got[n], f"{what} {n!r}", n) for n in names}


def _real(x) -> float | None:
    """x as a float, or None when it is no real number or too large for one (an int of 400 digits)."""
    if type(x) is bool or not isinstance(x, (int, float, np.integer, np.floating)):
        return None
    try:
        return float(x)
    except OverflowError:
        return None


def checked(obs, case: Case, like: Observation) -> Observation:
    """A clean copy of an adapter's observation of `case`, or BadObservation. `like` (the oracle's
    observation of the same case) gives each array's shape. Values come from another process and
    may be anything: a wrong name, type or shape would otherwise crash the verdict or, for complex
    numbers cast to real, let a case conform that should not."""
    names = param_names(case.model)

    def array(a, what, name):
        if type(a) is not np.ndarray:
            raise BadObservation(f"{what} is {type(a).__name__}, not a NumPy array")
        if a.dtype.kind not in "fiu":
            raise BadObservation(f"{what} has dtype {a.dtype}, not real numbers")
        if a.shape != like.initial[name].shape:
            raise BadObservation(f"{what} has shape {a.shape}, expected {like.initial[name].shape}")
        return a.astype(np.float64, copy=False)  # as the oracle's: no integer wrap-around in differences

    def flag(b, what, name):
        if type(b) not in (bool, np.bool_):
            raise BadObservation(f"{what} is {type(b).__name__}, not a bool")
        return bool(b)

    if type(obs) is not Observation:
        raise BadObservation(f"it is {type(obs).__name__}, not an Observation")
    params = getattr(obs, "optimizer_params", None)
    if type(params) is not list:
        raise BadObservation(f"optimizer_params is {type(params).__name__}, not a list of str")
    for n, p in enumerate(params):
        if type(p) is not str:
            raise BadObservation(f"optimizer_params[{n}] is {type(p).__name__}, not a str")
    clean = Observation(trainable=_dict_of(getattr(obs, "trainable", None), names, "trainable", flag),
                        optimizer_params=list(params),
                        initial=_dict_of(getattr(obs, "initial", None), names, "initial values", array),
                        grads_observed=flag(getattr(obs, "grads_observed", None), "grads_observed", None))
    decayed = getattr(obs, "decayed", None)
    clean.decayed = None if decayed is None else _dict_of(decayed, names, "decayed", flag)

    def setting(v, what, name):  # a real number, a pair for Adam's betas, a bool for a layer's bias
        if name.endswith(".bias"):
            if type(v) not in (bool, np.bool_):
                raise BadObservation(f"{what} is {type(v).__name__}, not a bool")
            return bool(v)
        items = list(v) if name.endswith(".betas") and type(v) in (list, tuple) and len(v) == 2 else [v]
        numbers = [_real(x) for x in items]
        if any(x is None or not np.isfinite(x) for x in numbers):
            shown = repr(items[0]) if len(repr(items[0])) < 60 else f"{type(items[0]).__name__} {repr(items[0])[:40]}..."
            raise BadObservation(f"{what} is {shown}, not a finite real number" + (" pair" if name.endswith(".betas") else ""))
        if name.endswith(".rate") and not 0 <= numbers[0] <= 1:
            raise BadObservation(f"{what} is {numbers[0]:g}, not a fraction of the inputs zeroed")
        if name.endswith(".padding") and not (0 <= numbers[0] <= PADDING_PROBE and 2 * numbers[0] == int(2 * numbers[0])):
            raise BadObservation(f"{what} is {numbers[0]:g}, not a padding in pixels per side")
        return numbers if name.endswith(".betas") else numbers[0]

    clean.defaults = _dict_of(getattr(obs, "defaults", None), defaults_of(case.model, case.optimizer),
                              "defaults", setting)
    steps, expected = getattr(obs, "steps", None), len(schedule(case))
    if type(steps) is not list:
        raise BadObservation(f"steps is {type(steps).__name__}, not a list")
    if len(steps) != expected:
        raise BadObservation(f"{len(steps)} steps, the case has {expected}")
    for i, step in enumerate(steps):
        if type(step) is not StepObservation:
            raise BadObservation(f"step {i} is {type(step).__name__}, not a StepObservation")
        raised = getattr(step, "raised", None)
        if raised is not None and (type(raised) is not str or len(raised) > MAX_RAISED):
            raise BadObservation(f"step {i} raised is {type(raised).__name__}"
                                 + (f" of {len(raised)} characters" if type(raised) is str else "") + ", not an error line")
        raw = getattr(step, "loss", None)
        loss = _real(raw)
        if loss is None:
            raise BadObservation(f"step {i} loss is {type(raw).__name__}, " + (
                "too large for a float" if isinstance(raw, (int, np.integer)) and type(raw) is not bool
                else "not a real number"))
        grads = _dict_of(getattr(step, "grads", None), names, f"step {i} grads",
                         lambda g, what, name: None if g is None else array(g, what, name))
        values = _dict_of(getattr(step, "values", None), names, f"step {i} values", array)
        disagree = getattr(step, "disagree", frozenset())
        if type(disagree) is not frozenset or not disagree <= set(names):
            raise BadObservation(f"step {i} disagree is not a set of the case's parameter names")
        clean.steps.append(StepObservation(loss=loss, grads=grads, values=values, raised=raised, disagree=disagree))
    return clean
