"""The audit where users already train: callbacks for the trainers that run the training loop themselves.
Each audits the first `steps` training steps (3 by default) as `conformance.audit` does, then steps aside;
the trainer's run is the same with or without it. Each module imports its framework:

    from conformance.callbacks.keras import AuditCallback      # model.fit(..., callbacks=[AuditCallback()])
    from conformance.callbacks.lightning import AuditCallback  # Trainer(callbacks=[AuditCallback()]).fit(module)
    from conformance.callbacks.hf import AuditCallback         # transformers.Trainer(..., callbacks=[AuditCallback()])

The callback's `report` holds the findings (conformance.auditor.AuditReport) once the audited steps ran.
"""
