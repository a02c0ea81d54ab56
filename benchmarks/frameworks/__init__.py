"""The frameworks the suite times: one module per framework in this package, each holding one
`Case` subclass written the way that framework's users write it.

Every case is the same model -- N_LAYERS equal WIDTH x WIDTH Linear/Dense layers with tanh after
each, the same fixed-seed weights and batch, mean squared error -- with the first
`masked_layers(fraction)` layers masked out of the update in one of four ways:

    frozen         requires_grad=False / stop_gradient=True / trainable=False on their parameters;
                   the optimizer still gets what users hand it (model.parameters(), or the
                   framework's trainable collection where that is the idiom)
    unused         those layers are skipped in the forward pass: no gradient reaches them
    zero_grad      every layer runs; their gradients are multiplied by zero before the update
    stop_gradient  every layer runs; the activation after the masked prefix is detached

`train_step()` is one turn of the user's loop (forward, backward, update, clearing the
framework's default way) and leaves that step's gradients in place, so `optimizer_step()` can time
the update alone. Both synchronise the device before returning.

Adding a framework is adding a module here (plus its asv.conf.json "include" line): a subclass of
`Case` that sets `framework` (the benchmark parameter) and `modules` (what it imports) registers
itself, and every module of this package is imported below. A framework module must not import
its framework at module level: frameworks are imported only when a case is built, so a process
that never builds one (a skipped parameter combination) pays for none (see `_preimport` for asv's
fork server).
"""
import importlib
import importlib.util
import pkgutil
import sys

from ..common import (MASKS, OPTIMIZERS, PREIMPORT, WARMUP_STEPS, check_config, device, masked_layers,
                      setting)

CASES = {}  # framework -> its Case subclass, filled as the modules below are imported


class Case:
    """The shared part: which layers are masked and how. A subclass with `framework` set registers
    itself in CASES; it builds its model in __init__, then calls warm_up(), and defines
    train_step() and optimizer_step() (and ready_update() where the update needs more than a built
    case)."""

    framework = None  # the benchmark parameter, e.g. "torch"
    modules = ()      # what it imports, the first being the one that must be installed
    warmup_steps = WARMUP_STEPS  # steps taken when built, before anything is timed

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("framework") is not None:
            if not cls.modules:
                raise TypeError(f"{cls.__name__}: framework {cls.framework!r} names no modules")
            if cls.framework in CASES:
                raise TypeError(f"{cls.__name__}: framework {cls.framework!r} is registered twice "
                                f"(also {CASES[cls.framework].__name__})")
            CASES[cls.framework] = cls

    def __init__(self, mask, fraction, optimizer):
        if mask not in MASKS:
            raise NotImplementedError(f"unknown mask {mask!r}")
        if optimizer not in OPTIMIZERS:
            raise NotImplementedError(f"unknown optimizer {optimizer!r}")
        self.mask, self.fraction, self.optimizer = mask, fraction, optimizer
        self.k = masked_layers(fraction)
        self.start = self.k if mask == "unused" else 0            # first layer run in forward
        self.cut = self.k - 1 if mask == "stop_gradient" else -1  # detach after this layer
        self.zero = mask == "zero_grad" and self.k > 0
        self.device = device()

    def warm_up(self):
        for _ in range(self.warmup_steps):  # lazy optimizer state, first-call caches
            self.train_step()

    def ready_update(self):
        """Whatever optimizer_step needs beyond a built case (the step's gradients are there)."""

    @staticmethod
    def audit_target():
        """{"model", "optimizer", "step"} of a ResNet-18 (about 11.7 M parameters) trained the
        framework's usual way, for audit_cost.py, and where a trainer's callback is measured on it
        (callback_cost.py) its "batch" (images, labels); NotImplementedError (a skip) where none is written."""
        raise NotImplementedError("no ResNet-18 audit target is written for this framework yet")


_built = {}


def available(framework):
    """Whether `framework` is importable here (without importing it)."""
    return importlib.util.find_spec(CASES[framework].modules[0]) is not None


def check(framework):
    """Whether a case of `framework` may be built here: NotImplementedError (a skip) when the
    framework is not installed in the environment asv runs in; RuntimeError (a failure) instead when
    CONFORMANCE_BENCH_REQUIRE (comma-separated) names it; ConfigError (a failure, one line) when a
    CONFORMANCE_BENCH_* variable holds a bad value."""
    if framework not in CASES:
        raise NotImplementedError(f"unknown framework {framework!r}")
    if not available(framework):
        if framework in REQUIRE:
            raise RuntimeError(f"CONFORMANCE_BENCH_REQUIRE={','.join(REQUIRE)}: "
                               f"{framework} is not importable in this environment")
        raise NotImplementedError(f"{framework} is not installed in this environment")
    check_config()  # after the skips: one failure per combination of the framework that is here


def build(framework, mask, fraction, optimizer):
    """A new case, built and warmed up (after `check`)."""
    check(framework)
    return CASES[framework](mask, fraction, optimizer)


def case(framework, mask, fraction, optimizer, tag=""):
    """The case for these parameters, built once per process (asv re-runs `setup` before every
    timed call; the model, its optimizer state and its warm-up are kept across those calls).
    Raises what `check` raises."""
    key = (framework, mask, fraction, optimizer, tag)
    if key not in _built:
        _built[key] = build(framework, mask, fraction, optimizer)
    return _built[key]


def _preimport():
    """Import the installed framework in asv's fork server, once.

    With launch_method "forkserver" asv imports the suite in one server process and forks a
    process per benchmark and parameter combination, so a framework imported here is paid for
    once instead of in each of them (1-3 s apiece). With "spawn" every process imports the suite,
    skipped combinations included, so nothing is imported there. None of the four frameworks
    starts a thread on import, which keeps the fork safe. CONFORMANCE_BENCH_PREIMPORT=0 turns
    this off."""
    if sys.argv[1:2] != ["run_server"] or not PREIMPORT:
        return
    for framework, cls in CASES.items():
        if available(framework):
            try:
                for module in cls.modules:
                    importlib.import_module(module)
            except Exception:  # noqa: BLE001 - the benchmark's own setup reports the real error
                pass


# Every module of this package, each registering its Case (alphabetical: pkgutil sorts them).
for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
FRAMEWORKS = tuple(CASES)


def _require(text):
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    for name in names:
        if name not in CASES:
            raise ValueError(name)
    return names


# Frameworks that must be installed where the suite runs: their combinations fail instead of
# skipping in an environment without them (tox's bench envs set it to the env's framework).
REQUIRE = setting("CONFORMANCE_BENCH_REQUIRE", (), _require,
                  f"comma-separated framework names out of {', '.join(FRAMEWORKS)}")
_preimport()
