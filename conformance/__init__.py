"""Cross-framework conformance suite for gradient and regularization semantics."""


def audit(model, optimizer, step, framework, steps=3, on_step=None):
    """The audit of a user's own model (conformance.auditor.audit): run `step`, one training step as
    the user's loop runs it, `steps` times and return an AuditReport of findings."""
    from .auditor import audit as run_audit
    return run_audit(model, optimizer, step, framework=framework, steps=steps, on_step=on_step)
