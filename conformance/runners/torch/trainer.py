"""torch's trainer: there is none. torch ships no training loop of its own (its users write one;
Lightning and others are separate projects), so the adapter offers only --api loop, the hand-written
loop in runner.py, and refuses --api trainer with NO_TRAINER (base.Runner raises it as Unavailable).
"""

NO_TRAINER = ("torch has no trainer of its own (its users write the training loop; Lightning and "
              "others are separate projects): run it with --api loop")
