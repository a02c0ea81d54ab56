"""What `conformance.audit` costs on a ResNet-18-sized model (about 11.7 M parameters): its time next
to the same number of plain steps of the user's step, and how far it raises the peak memory, next to
the model's parameter bytes.

The ResNet-18 of each framework is its Case's `audit_target()` (frameworks/<fw>.py); a framework
without one is skipped. Both figures are measured in one process (asv's setup_cache), so the model is
built and its first steps paid once.
"""
import resource
import statistics
import time
import traceback

from .common import AUDIT_REPEATS, AUDIT_STEPS
from .frameworks import CASES, FRAMEWORKS, check


def _target(framework):
    """The framework's ResNet-18: {model, optimizer, step} as `audit` takes them (its batch left out)."""
    check(framework)
    target = CASES[framework].audit_target()
    target.pop("batch", None)
    return target


def _peak_memory_ratio(target, framework):
    """How far the audit raises the process's peak resident memory above that of as many plain steps
    (ru_maxrss, taken after the plain steps and again after the audit), in bytes of the model's
    parameters and statistics. Measured first, while the peak is still the plain steps'."""
    import conformance
    from conformance.auditor import probe_class
    inventory = probe_class(framework)(target["model"], target["optimizer"]).inventory()
    model_bytes = 4 * sum(p.size for p in inventory.params)  # float32
    for _ in range(AUDIT_STEPS):
        target["step"]()
    plain = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    conformance.audit(**target, framework=framework, steps=AUDIT_STEPS)
    audited = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (audited - plain) * 1024 / model_bytes  # ru_maxrss is in KiB on Linux


def _time_ratio(target, framework):
    """Median time of audit(steps=AUDIT_STEPS) / median time of AUDIT_STEPS plain steps, the two
    alternated AUDIT_REPEATS times."""
    import conformance
    plain, audited = [], []
    for _ in range(AUDIT_REPEATS):
        start = time.perf_counter()
        for _ in range(AUDIT_STEPS):
            target["step"]()
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        conformance.audit(**target, framework=framework, steps=AUDIT_STEPS)
        audited.append(time.perf_counter() - start)
    return statistics.median(audited) / statistics.median(plain)


def audit_costs():
    """{framework: {"time": ratio, "memory": ratio}, or the one-line error that stopped it}, for each
    framework here with a ResNet-18; the others are left out (their setup says why)."""
    costs = {}
    for framework in FRAMEWORKS:
        try:
            target = _target(framework)
        except Exception:  # noqa: BLE001 - a skip or a failure: setup says which
            continue
        try:
            target["step"]()  # first-call costs (allocator, kernels) belong to neither side
            costs[framework] = {"memory": _peak_memory_ratio(target, framework),
                                "time": _time_ratio(target, framework)}
        except Exception as exc:  # noqa: BLE001 - reported by both of its benchmarks
            traceback.print_exc()
            lines = str(exc).strip().splitlines()
            costs[framework] = f"{type(exc).__name__}: {lines[0] if lines else ''}"
        target = None  # freed before the next framework's model is built
    return costs


class AuditCost:
    params = [list(FRAMEWORKS)]
    param_names = ["framework"]
    timeout = 900.0

    def setup_cache(self):
        return audit_costs()

    setup_cache.timeout = 1800.0  # every framework here, in one process

    def setup(self, measured, framework):
        if framework not in measured:
            _target(framework)  # the skip (no framework, no ResNet-18) or failure (required, bad setting)
            raise RuntimeError(f"audit_costs (the setup_cache) has no value for {framework} here")
        if isinstance(measured[framework], str):
            raise RuntimeError(measured[framework])

    def track_time_ratio(self, measured, framework):
        """median time of audit(steps=AUDIT_STEPS) / median time of AUDIT_STEPS plain steps, the two
        alternated AUDIT_REPEATS times (the issue asks for under 1.5)"""
        return measured[framework]["time"]

    track_time_ratio.unit = "ratio"

    def track_peak_memory_per_parameter_byte(self, measured, framework):
        """how far the audit raises the process's peak resident memory above that of as many plain
        steps (ru_maxrss, taken after the plain steps and again after the audit), in bytes of the
        model's parameters and statistics (the issue asks for under 2)"""
        return measured[framework]["memory"]

    track_peak_memory_per_parameter_byte.unit = "ratio"
