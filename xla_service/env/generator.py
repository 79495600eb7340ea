"""``generator://xla-random-v0``: seeded random JAX programs as a CompilerGym generator dataset.

>>> env.reset(benchmark="generator://xla-random-v0/42")
>>> generator_metadata(42)["program"]["blocks"]       # what seed 42 drew (the disk cache)

As CompilerGym's ``generator://llvm-stress-v0``: a benchmark per uint32 seed,
``size == 0``, ``benchmark_uris()`` an endless iterator. No jax here: a
benchmark's program is a recipe (``catalog/generator.py``) that the service
turns into HLO in a worker process (``datasets/generator/``), through the
engine's cache and the experience store, and keeps in the disk cache
(``$XLA_GYM_GENERATED``) with its metadata, which :func:`generator_metadata`
reads. ``?ops=MIN-MAX`` after the seed asks for another op count range.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np
from compiler_gym.datasets import Benchmark, BenchmarkUri, Dataset

from xla_service.catalog.generator import (
    DATASET,
    DEFAULT_OPS,
    MAX_SEED,
    Recipe,
    parse_ops,
    parse_seed,
    uri_form,
)
from xla_service.env.validation import make_validatable

__all__ = ["GeneratorDataset", "SeedUris", "UriChain", "generator_uris", "generator_metadata", "recipe_of"]


def _ops_of(params: dict[str, list[str]]) -> tuple[int, int]:
    unknown = sorted(set(params) - {"ops"})
    if unknown:
        raise LookupError(f"Unknown generator parameter {unknown[0]!r}: expected {uri_form()}")
    return parse_ops(params["ops"][-1]) if "ops" in params else DEFAULT_OPS


def recipe_of(uri: str | BenchmarkUri) -> Recipe:
    """The recipe of ``generator://xla-random-v0/<seed>[?ops=MIN-MAX]``; ``LookupError``
    (for an unknown dataset or a path that is not a seed) or ``ValueError`` (a seed or
    range out of bounds), both naming the valid form."""
    parsed = uri if isinstance(uri, BenchmarkUri) else BenchmarkUri.from_string(uri)
    if f"{parsed.scheme}://{parsed.dataset}" != DATASET:
        raise LookupError(f"Not a generator benchmark: {parsed}: expected {uri_form()}")
    path = parsed.path.lstrip("/")
    if not path.isdigit() or not path.isascii():
        raise LookupError(f"Benchmark not found: {parsed}: expected {uri_form()}")
    return Recipe(parse_seed(path), _ops_of(parsed.params))


class GeneratorDataset(Dataset):
    """One seeded random JAX program per uint32 seed (``datasets/README.md``, "The generator")."""

    #: No manifest: modules are generated on demand (code that reads the suites'
    #: manifest entries sees none here).
    entries: dict[str, dict[str, Any]] = {}

    def __init__(self) -> None:
        super().__init__(
            name=DATASET,
            description="Seeded random JAX programs (inference graphs and training steps) from a grammar of blocks",
            license="MIT",
            validatable="Yes",
        )

    @property
    def size(self) -> int:
        return 0  # unbounded, as CompilerGym's generator datasets report

    def benchmark_uris(self) -> Iterable[str]:
        return (f"{self.name}/{seed}" for seed in range(MAX_SEED + 1))

    def benchmark_from_parsed_uri(self, uri: BenchmarkUri) -> Benchmark:
        return self.benchmark_from_seed(recipe_of(uri))

    def benchmark_from_seed(self, seed: int | Recipe) -> Benchmark:
        """The benchmark of ``seed`` (an int in ``[0, 2**32)``, or a recipe)."""
        recipe = seed if isinstance(seed, Recipe) else Recipe(int(seed))
        return make_validatable(Benchmark.from_file_contents(recipe.uri, recipe.encode()))

    def _random_benchmark(self, random_state: np.random.Generator) -> Benchmark:
        return self.benchmark_from_seed(int(random_state.integers(MAX_SEED + 1)))


class _LazyUris(Sequence[str]):
    """A sequence of URIs computed on access: subclasses give ``__len__`` and ``_at``."""

    def _at(self, index: int) -> str:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._at(index)


class SeedUris(_LazyUris):
    """The URIs of the seeds ``first .. last`` (inclusive), lazily: a range of ``2**32`` is fine."""

    def __init__(self, first: int = 0, last: int = MAX_SEED, ops: tuple[int, int] = DEFAULT_OPS) -> None:
        if not 0 <= first <= last <= MAX_SEED:
            raise ValueError(f"Invalid seed range {first}-{last}: expected 0 <= FIRST <= LAST <= {MAX_SEED}")
        self.first, self.last, self.ops = first, last, ops

    def __len__(self) -> int:
        return self.last - self.first + 1

    def _at(self, index: int) -> str:
        return Recipe(self.first + index, self.ops).uri

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"SeedUris({self.first}, {self.last}, ops={self.ops})"


class UriChain(_LazyUris):
    """Sequences of URIs one after the other, lazily (a :class:`SeedUris` of every seed included)."""

    def __init__(self, parts: Sequence[Sequence[str]]) -> None:
        self.parts = list(parts)

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def _at(self, index: int) -> str:
        for part in self.parts:
            if index < len(part):
                return part[index]
            index -= len(part)
        raise IndexError(index)

    def __iter__(self) -> Iterator[str]:
        return (u for p in self.parts for u in p)


def generator_uris(spec: str) -> Sequence[str] | None:
    """The URIs ``spec`` names, or None if it is not a generator URI:
    ``generator://xla-random-v0`` (every seed), ``.../<seed>``, or ``.../<first>-<last>``
    (inclusive), each optionally with ``?ops=MIN-MAX``."""
    parsed = BenchmarkUri.from_string(spec)
    if f"{parsed.scheme}://{parsed.dataset}" != DATASET:
        return None
    ops = _ops_of(parsed.params)
    path = parsed.path.strip("/")
    if not path:
        return SeedUris(0, MAX_SEED, ops)
    first, dash, last = path.partition("-")
    try:
        low = parse_seed(first)
        high = parse_seed(last) if dash else low
    except ValueError as e:
        raise LookupError(f"{e} (or a range {DATASET}/<first>-<last>)") from None
    return SeedUris(low, high, ops)


def generator_metadata(benchmark: int | str | Recipe) -> dict[str, Any]:
    """The metadata of a generated benchmark (a seed, its URI, or a recipe), read from the
    disk cache of this machine: the grammar draw (``program``), ``op_count``, ``opcodes``,
    ``dtypes``, ``parameters``, ``inputs``, ``rejected`` draws. ``LookupError`` if it is not
    there (never generated here, or ``$XLA_GYM_GENERATED=off``)."""
    from xla_gym_datasets.generator.cache import CACHE_VARIABLE, read_metadata  # jax-free

    if isinstance(benchmark, Recipe):
        recipe = benchmark
    elif isinstance(benchmark, int):
        recipe = Recipe(benchmark)
    else:
        recipe = recipe_of(benchmark)
    found = read_metadata(recipe)
    if found is None:
        raise LookupError(
            f"No metadata for {recipe.uri} in the generator's disk cache: reset an env to it on "
            f"this machine first (with ${CACHE_VARIABLE} not 'off')"
        )
    return found
