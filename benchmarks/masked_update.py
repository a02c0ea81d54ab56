"""Masked vs unmasked update paths.

When most of a model is masked out of an update -- frozen, unused this step, gradient
zero-masked, or behind stop_gradient -- does the framework's step cost shrink with the trainable
share, or does it still pay for every parameter?

The framework is the one installed in the environment asv runs in: `setup` raises
NotImplementedError for the others, so each environment reports its own framework.
"""
import traceback

from .common import (FRACTIONS, MASKS, OPTIMIZERS, RELATIVE_REPEATS, busy_threads, interleaved_medians,
                     selected)
from .frameworks import FRAMEWORKS, build, case, check


def _ready_update(framework, mask, fraction, optimizer):
    case(framework, mask, fraction, optimizer).ready_update()


def relative_costs():
    """Every track_step_cost_relative value of the frameworks installed here, measured in this one
    process (asv's setup_cache, run once per environment): {(framework, mask, fraction, optimizer):
    masked median step time / unmasked median step time, or the one-line error that stopped it}.

    One unmasked reference per optimizer serves all of its masked models, each measured against it
    alone with their steps alternated (common.interleaved_medians), the masked model freed before
    the next is built. At fraction 0 no layer is masked, so all four masks are the same unmasked
    model: it is measured once per optimizer (a second unmasked model against the reference, the
    noise floor) and that value stands for the four masks. Only what CONFORMANCE_BENCH_SELECT
    selects is measured."""
    costs = {}
    for framework in FRAMEWORKS:
        try:
            check(framework)
        except Exception:  # noqa: BLE001 - a skip or a failure: each combination's setup says which
            continue
        for optimizer in OPTIMIZERS:
            keys = [(framework, mask, fraction, optimizer) for mask in MASKS for fraction in FRACTIONS]
            keys = [key for key in keys if selected(*key)]
            if not keys:
                continue
            try:
                reference = build(framework, MASKS[0], 0.0, optimizer)
            except Exception as exc:  # noqa: BLE001 - reported by each combination it stops
                traceback.print_exc()
                costs.update(dict.fromkeys(keys, _one_line(exc)))
                continue
            unmasked = None  # the value at fraction 0, whichever mask is asked for first
            for key in keys:
                _, mask, fraction, _ = key
                if fraction == 0.0 and unmasked is not None:
                    costs[key] = unmasked
                    continue
                try:
                    masked = build(framework, mask, fraction, optimizer)
                    first, second = interleaved_medians(masked.train_step, reference.train_step,
                                                        RELATIVE_REPEATS)
                    costs[key] = first / second
                except Exception as exc:  # noqa: BLE001
                    traceback.print_exc()
                    costs[key] = _one_line(exc)
                masked = None  # freed before the next one is built
                if fraction == 0.0:
                    unmasked = costs[key]
            reference = None
    return costs


relative_costs.timeout = 1800.0  # every combination of a framework, in one process


def _one_line(exc):
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


class MaskedUpdate:
    params = (list(FRAMEWORKS), list(MASKS), list(FRACTIONS), list(OPTIMIZERS))
    param_names = ["framework", "mask", "fraction", "optimizer"]
    timeout = 300.0         # building a 64-layer model and warming it up, per process
    repeat = (10, 50, 10.0)  # samples of one step each: at least 10, at most 50 or 10 s

    def setup(self, *args):
        """The case of these parameters, built once per process. track_step_cost_relative, whose
        arguments start with the values its setup_cache measured, builds none: its setup only
        skips or fails where the framework is not here, or where that combination's measurement
        failed."""
        *measured, framework, mask, fraction, optimizer = args
        if not measured:
            self.case = case(framework, mask, fraction, optimizer)
            return
        check(framework)
        if not selected(framework, mask, fraction, optimizer):
            raise NotImplementedError("not selected by CONFORMANCE_BENCH_SELECT")
        value = measured[0].get((framework, mask, fraction, optimizer))
        if value is None:
            raise RuntimeError(f"relative_costs (the setup_cache) has no value for {framework} here")
        if isinstance(value, str):
            raise RuntimeError(value)
        self.relative = value

    def time_train_step(self, framework, mask, fraction, optimizer):
        """forward, backward, optimizer step and gradient clearing, the framework's default way"""
        self.case.train_step()

    def time_optimizer_step(self, framework, mask, fraction, optimizer):
        """the optimizer update alone, on the gradients of the last step"""
        self.case.optimizer_step()

    time_optimizer_step.setup = _ready_update  # after setup, for this benchmark only

    def peakmem_train_step(self, framework, mask, fraction, optimizer):
        self.case.train_step()

    def track_step_cost_relative(self, measured, framework, mask, fraction, optimizer):
        """median masked step time / median unmasked step time, the two models' steps alternated
        (common.RELATIVE_REPEATS); the ideal for a mask that spares the masked share is 1 - fraction.
        Measured for all combinations at once, in relative_costs (this benchmark's setup_cache)."""
        return self.relative

    track_step_cost_relative.unit = "ratio"
    track_step_cost_relative.setup_cache = relative_costs

    def track_threads(self, framework, mask, fraction, optimizer):
        """threads of the process that did work while steps ran (the pinned count shows here)"""
        return busy_threads(self.case.train_step)

    track_threads.unit = "threads"
