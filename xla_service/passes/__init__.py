"""The pass engine: real XLA passes on HLO modules (see README, "The pass engine").

Only ``xla.py`` (and modules it imports) import jax, and only worker
processes import it; everything else here is jax-free.
"""
