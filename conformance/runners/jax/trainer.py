"""JAX's trainer: there is none. jax, flax nnx and optax ship no training loop of their own: the flax
guides write `train_step` by hand (nnx.value_and_grad, then optimizer.update(model, grads)), and the
trainers built on them (Keras 3 with KERAS_BACKEND=jax, CLU, Orbax's checkpointing loops) are separate
projects. Keras-on-JAX would check the Keras room's trainer on a second backend, not flax's semantics,
so the room offers only --api loop, the hand-written loop in runner.py, and refuses --api trainer with
NO_TRAINER (base.Runner raises it as Unavailable).
"""

NO_TRAINER = ("jax, flax and optax have no trainer of their own (flax's users write train_step by hand; Keras 3 "
              "on the jax backend is the tensorflow room's Keras): run it with --api loop")
