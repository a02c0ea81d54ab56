"""Masked vs unmasked update paths.

When most of a model is masked out of an update -- frozen, unused this step, gradient
zero-masked, or behind stop_gradient -- does the framework's step cost shrink with the trainable
share, or does it still pay for every parameter?

The framework is the one installed in the environment asv runs in: `setup` raises
NotImplementedError for the others, so each environment reports its own framework.
"""
from .common import RELATIVE_REPEATS, busy_threads, interleaved_medians
from .frameworks import FRAMEWORKS, MASKS, OPTIMIZERS, case


def _ready_update(framework, mask, fraction, optimizer):
    case(framework, mask, fraction, optimizer).ready_update()


class MaskedUpdate:
    params = (list(FRAMEWORKS), list(MASKS), [0.0, 0.5, 0.9, 0.99], list(OPTIMIZERS))
    param_names = ["framework", "mask", "fraction", "optimizer"]
    timeout = 300.0         # building a 64-layer model and warming it up, per process
    repeat = (10, 50, 10.0)  # samples of one step each: at least 10, at most 50 or 10 s

    def setup(self, framework, mask, fraction, optimizer):
        self.case = case(framework, mask, fraction, optimizer)

    def time_train_step(self, framework, mask, fraction, optimizer):
        """forward, backward, optimizer step and gradient clearing, the framework's default way"""
        self.case.train_step()

    def time_optimizer_step(self, framework, mask, fraction, optimizer):
        """the optimizer update alone, on the gradients of the last step"""
        self.case.optimizer_step()

    time_optimizer_step.setup = _ready_update  # after setup, for this benchmark only

    def peakmem_train_step(self, framework, mask, fraction, optimizer):
        self.case.train_step()

    def track_step_cost_relative(self, framework, mask, fraction, optimizer):
        """median masked step time / median unmasked step time, the two models' steps alternated
        (RELATIVE_REPEATS each); the ideal for a mask that spares the masked share is 1 - fraction"""
        unmasked = case(framework, mask, 0.0, optimizer, tag="unmasked")
        masked, plain = interleaved_medians(self.case.train_step, unmasked.train_step, RELATIVE_REPEATS)
        return masked / plain

    track_step_cost_relative.unit = "ratio"

    def track_threads(self, framework, mask, fraction, optimizer):
        """threads of the process that did work while steps ran (the pinned count shows here)"""
        return busy_threads(self.case.train_step)

    track_threads.unit = "threads"
