"""Your own modules as the Gymnasium env's benchmarks.

``XlaGymEnv(benchmarks=[...])`` takes, beside URIs and suites, your own
modules: a ``Benchmark`` (e.g. ``benchmark_from_jax(fn, *args)``), HLO text,
or the path of an HLO text file (``pathlib.Path``, or a string naming an
existing file). Each becomes a ``Benchmark`` under a URI of its own
(``benchmark://hlo-v0/<module>-<digest>``, ``benchmark://file-v0/<stem>-<digest>``,
or the ``Benchmark``'s), which the env hands to the service at reset.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from compiler_gym.datasets import Benchmark

from xla_service.env.validation import make_validatable

__all__ = ["OwnBenchmarks", "own_benchmarks"]

#: URI -> the benchmark, for the benchmarks no dataset of the service knows.
OwnBenchmarks = dict[str, Benchmark]
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_MODULE_NAME = re.compile(r"^\s*HloModule\s+([^\s,]+)", re.MULTILINE)


def _name(text: str, fallback: str) -> str:
    return _UNSAFE.sub("_", text).strip("_") or fallback


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def _from_text(text: str) -> Benchmark:
    match = _MODULE_NAME.search(text)
    data = text.encode()
    name = _name(match.group(1) if match else "module", "module")
    return make_validatable(Benchmark.from_file_contents(f"benchmark://hlo-v0/{name}-{_digest(data)}", data))


def _from_file(path: Path) -> Benchmark:
    if not path.is_file():
        raise FileNotFoundError(f"Expected an HLO text file, got {str(path)!r}: no such file")
    data = path.read_bytes()
    name = _name(path.name.split(".")[0], "file")
    return make_validatable(Benchmark.from_file_contents(f"benchmark://file-v0/{name}-{_digest(data)}", data))


def _own(item: Any) -> Benchmark | None:
    """``item`` as a benchmark of your own, or None if it is a URI or a suite."""
    if isinstance(item, Benchmark):
        return make_validatable(item)
    if isinstance(item, os.PathLike):
        return _from_file(Path(item))
    if isinstance(item, str):
        if _MODULE_NAME.search(item):
            return _from_text(item)
        if "://" not in item and ("/" in item or os.sep in item) and Path(item).is_file():
            return _from_file(Path(item))
        return None
    raise TypeError(
        f"Expected a benchmark URI, a suite, a Benchmark, HLO text or a file path, got {type(item).__name__}"
    )


def own_benchmarks(benchmarks: Any) -> tuple[Any, OwnBenchmarks]:
    """``benchmarks`` with each benchmark of your own replaced by its URI, and those
    benchmarks by URI; anything else (a ``"SUITE:SPLIT,..."`` string, URIs, lazy
    generator seeds) is left for ``resolve_benchmarks``."""
    if benchmarks is None:
        return None, {}
    single = isinstance(benchmarks, (Benchmark, os.PathLike)) or (
        isinstance(benchmarks, str) and _own(benchmarks) is not None
    )
    if single:
        benchmarks = [benchmarks]
    elif isinstance(benchmarks, str) or not isinstance(benchmarks, (list, tuple)):
        return benchmarks, {}
    own: OwnBenchmarks = {}
    uris: list[str] = []
    for item in benchmarks:
        benchmark = _own(item)
        if benchmark is None:
            uris.append(str(item))
            continue
        uri = str(benchmark.uri)
        if uri in own and own[uri].proto.program != benchmark.proto.program:
            raise ValueError(f"Expected one module per URI, got two different modules as {uri}")
        own[uri] = benchmark
        uris.append(uri)
    return uris, own

