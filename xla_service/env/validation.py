"""Semantic validation of xla-v0 episodes: the service executes, the client judges.

Every xla-v0 benchmark gets :func:`validate_semantics` as its validation
callback (``Benchmark.add_validation_callback``), so ``env.validate()`` and
``python -m compiler_gym.bin.validate --env=xla-v0`` check, after replaying
the actions, that the current module still computes what the benchmark
computes: the service executes both on the same seeded inputs
(``xla.validate`` session parameter) and compares every output with
dtype-aware tolerances (README, "Validation"). No jax here.

Callbacks run in the validating thread (:class:`XlaBenchmark`): CompilerGym's
``Benchmark`` runs them on its shared thread pool, which
``compiler_gym.bin.validate`` already fills with its own jobs, so a CSV of
more rows than cores deadlocked.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from compiler_gym.datasets import Benchmark
from compiler_gym.errors import ValidationError

__all__ = ["XlaBenchmark", "validate_semantics", "make_validatable", "verdict_errors"]


class XlaBenchmark(Benchmark):
    """A ``Benchmark`` whose validation callbacks run in the calling thread."""

    def ivalidate(self, env: Any) -> Iterable[ValidationError]:
        for callback in self.validation_callbacks():
            yield from callback(env) or []


def verdict_errors(verdict: dict[str, Any]) -> list[ValidationError]:
    """The validation errors of a service verdict (empty: same computation)."""
    status = verdict.get("status")
    errors = [str(e) for e in verdict.get("errors", [])]
    if status == "ok":
        return []
    if status == "mismatch":
        return [
            ValidationError(type=f"Output mismatch: {e}", data={"status": status})
            for e in errors or ["unknown difference"]
        ]
    if status == "current_failed":
        return [
            ValidationError(type=f"The current module does not run: {e}", data={"status": status})
            for e in errors or ["unknown failure"]
        ]
    if status == "nondeterministic":
        reason = "the benchmark's outputs are not deterministic (two runs differ)"
    elif status == "not_executable":
        reason = "the benchmark cannot execute on CPU"
    else:
        reason = f"unexpected verdict {status!r}"
    detail = f": {errors[0]}" if errors else ""
    return [
        ValidationError(
            type=f"Cannot validate: {reason}{detail}",
            data={"status": str(status), "errors": errors},
        )
    ]


def validate_semantics(env: Any) -> list[ValidationError]:
    """Compare the current module's outputs with the benchmark's (a validation callback)."""
    try:
        reply = env.send_param("xla.validate", "")
    except (ValueError, OSError) as e:
        return [ValidationError(type=f"Validation failed to run: {e}", data={})]
    return verdict_errors(json.loads(reply))


def make_validatable(benchmark: Benchmark) -> XlaBenchmark:
    """``benchmark`` as an :class:`XlaBenchmark` with :func:`validate_semantics`."""
    if not isinstance(benchmark, XlaBenchmark):
        copy = XlaBenchmark(
            proto=benchmark.proto,
            validation_callbacks=list(benchmark.validation_callbacks()),
            sources=list(benchmark.sources),
        )
        benchmark = copy
    if validate_semantics not in benchmark.validation_callbacks():
        benchmark.add_validation_callback(validate_semantics)
    return benchmark
