"""Benchmark suites of real HLO modules made with JAX (see README.md)."""
