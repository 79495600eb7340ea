"""Any JAX function as an xla-v0 benchmark: ``benchmark_from_jax(fn, *args)``.

>>> import jax.numpy as jnp
>>> from xla_service.tools.from_jax import benchmark_from_jax
>>> benchmark = benchmark_from_jax(lambda x: jnp.tanh(x @ x.T), jnp.ones((8, 4)))
>>> env.reset(benchmark=benchmark)

The function is lowered with ``jax.jit`` (or its own ``lower`` if already
jitted) for the example arguments (arrays, or ``jax.ShapeDtypeStruct``), and
its HLO text becomes the benchmark; the service normalizes it like any
other. jax is imported only when this is called. The benchmark is
validatable: ``env.validate()`` executes it.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from compiler_gym.datasets import Benchmark

from xla_service.env.validation import make_validatable

__all__ = ["benchmark_from_jax", "hlo_text_from_jax"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def hlo_text_from_jax(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The HLO text of ``fn`` lowered for ``args`` (and keyword ``kwargs``)."""
    import jax

    lower = getattr(fn, "lower", None)
    lowered = lower(*args, **kwargs) if callable(lower) else jax.jit(fn).lower(*args, **kwargs)
    return str(lowered.as_text(dialect="hlo"))


def benchmark_from_jax(
    fn: Callable[..., Any], *args: Any, uri: str | None = None, **kwargs: Any
) -> Benchmark:
    """A ``benchmark://jax-v0/<name>-<digest>`` benchmark (or ``uri``) of ``fn(*args)``."""
    if not callable(fn):
        raise TypeError(f"Expected a function, got {type(fn).__name__}")
    text = hlo_text_from_jax(fn, *args, **kwargs)
    if uri is None:
        name = _UNSAFE.sub("_", getattr(fn, "__name__", "fn")).strip("_") or "fn"
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        uri = f"benchmark://jax-v0/{name}-{digest}"
    if not uri.startswith("benchmark://") or len(uri) <= len("benchmark://"):
        raise ValueError(f"Expected a benchmark://<dataset>/<name> URI, got {uri!r}")
    return make_validatable(Benchmark.from_file_contents(uri, text.encode()))
