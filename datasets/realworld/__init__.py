"""Benchmarks lowered from public JAX libraries (issue 61): one dataset
``xla-<library>-v0`` per library, built by ``python -m xla_gym_datasets.realworld``."""
