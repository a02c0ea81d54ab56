"""The oracle: the reference semantics in NumPy (reference.py) and the points where a framework may differ
(semantics.py), the closed vocabulary of variants (variants/, each declaring the points it changes), and each
framework's profile of variants (known.py reads known.yaml)."""
