"""Helpers for researchers: bring your own JAX models (``from_jax.py``)."""
