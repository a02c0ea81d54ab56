"""The jax room has no probe of `python -m conformance audit` yet (its __init__.py names no AUDIT, so
`audit --framework jax` says the room has none). What one would read: the user's nnx.Module graph
(nnx.iter_graph: Param and BatchStat variables, nnx.List / nnx.Dict containers; plain lists raise at
assignment in flax 0.12), the nnx.Optimizer's `wrt` state, and the gradient State handed to
optimizer.update(model, grads), by wrapping that method of the instance for the steps audited.
"""
