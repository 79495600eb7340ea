"""Seeded random JAX programs: the benchmark generator behind ``generator://xla-random-v0``.

>>> from xla_gym_datasets.generator import generate
>>> made = generate(42)               # the module of seed 42 (disk cache, else made here)
>>> made.text, made.metadata["program"]["blocks"]

Importing this package does not import jax (the client reads the disk cache
through :mod:`xla_gym_datasets.generator.cache`); :func:`generate` does. The
grammar and how to add a building block: ``datasets/README.md``, "The generator".
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xla_service.catalog.generator import DATASET, DEFAULT_OPS, MAX_SEED, VERSION, Recipe

if TYPE_CHECKING:
    from xla_gym_datasets.generator.core import Generated

__all__ = ["DATASET", "DEFAULT_OPS", "MAX_SEED", "VERSION", "Recipe", "generate", "blocks"]


def generate(seed: int | Recipe, ops: tuple[int, int] | None = None, use_cache: bool = True) -> Generated:
    """The module of ``seed`` (op count in ``ops``, default :data:`DEFAULT_OPS`): text and metadata."""
    from xla_gym_datasets.generator import core

    recipe = seed if isinstance(seed, Recipe) else Recipe(seed, ops or DEFAULT_OPS)
    return core.generate(recipe, use_cache)


def blocks() -> dict[str, Any]:
    """The grammar's table of building blocks (imports jax)."""
    from xla_gym_datasets.generator import program  # registers every block
    from xla_gym_datasets.generator.grammar import BLOCKS

    del program
    return dict(BLOCKS)
