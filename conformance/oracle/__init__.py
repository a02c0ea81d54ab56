"""The oracle: the reference semantics in NumPy (reference.py), the closed vocabulary of their
variants (variants.py), and each framework's profile of variants (known.py reads known.yaml)."""
