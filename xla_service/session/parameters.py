"""Session parameters of xla-v0 (``env.send_param(key, value)``), documented in the README.

Per session: ``xla.runtime.repetitions``, ``xla.runtime.pipeline``,
``xla.inputs.seed``, ``xla.pass_errors``, ``xla.validate``. Per service (every session shares one
engine), and so only for the client that launched the service
(:data:`SERVICE_PARAMETERS`, enforced by the runtime): ``xla.step_timeout``,
``xla.engine.workers``. ``xla.engine.stats`` reads counters. An empty value
reads a setting without changing it.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Protocol

from xla_service.catalog.schema import MAX_RUNTIME_REPETITIONS, RUNTIME_PIPELINES
from xla_service.errors import close_matches
from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import Engine

__all__ = [
    "ParameterSession",
    "handle_parameter",
    "pass_errors_default",
    "PARAMETERS",
    "SERVICE_PARAMETERS",
    "MAX_WORKERS",
    "STEP_TIMEOUT_RANGE",
    "PASS_ERROR_MODES",
    "PASS_ERRORS_VARIABLE",
]

MAX_WORKERS = 64
#: Seconds: the shortest and longest ``xla.step_timeout``.
STEP_TIMEOUT_RANGE = (1.0, 86400.0)
#: What a step does when XLA fails or aborts in the pass: count it as a step
#: without effect, its error in ``info["pass_error"]`` (the default, which
#: stock agents survive and which replays identically), or raise ValueError.
PASS_ERROR_MODES = ("no_effect", "raise")
#: The service's default for ``xla.pass_errors``.
PASS_ERRORS_VARIABLE = "XLA_GYM_PASS_ERRORS"
#: Settings of the whole service: only the client that launched it may change them.
SERVICE_PARAMETERS: frozenset[str] = frozenset({"xla.step_timeout", "xla.engine.workers"})
#: Parameters that exist for tests only (served when ``XLA_GYM_TEST_HOOKS=1``).
_TEST_HOOKS = os.environ.get("XLA_GYM_TEST_HOOKS", "") not in ("", "0")


def pass_errors_default() -> str:
    """``$XLA_GYM_PASS_ERRORS`` if it names a mode, else ``no_effect``."""
    mode = os.environ.get(PASS_ERRORS_VARIABLE, PASS_ERROR_MODES[0])
    return mode if mode in PASS_ERROR_MODES else PASS_ERROR_MODES[0]


class ParameterSession(Protocol):
    """What a parameter reads or sets on a session."""

    engine: Engine
    initial: Analysis
    state: Analysis
    runtime_repetitions: int
    runtime_pipeline: str
    input_seed: int
    pass_errors: str


def _int(key: str, value: str, low: int, high: int) -> int:
    try:
        number = int(value)
    except ValueError:
        number = low - 1
    if not low <= number <= high:
        raise ValueError(f"{key}: expected an integer in [{low}, {high}], got {value!r}")
    return number


def _repetitions(s: ParameterSession, key: str, value: str) -> str:
    if value:
        s.runtime_repetitions = _int(key, value, 1, MAX_RUNTIME_REPETITIONS)
    return str(s.runtime_repetitions)


def _pipeline(s: ParameterSession, key: str, value: str) -> str:
    if value:
        if value not in RUNTIME_PIPELINES:
            raise ValueError(
                f"{key}: expected one of {list(RUNTIME_PIPELINES)}, got {value!r}.{close_matches(value, RUNTIME_PIPELINES)}"
            )
        s.runtime_pipeline = value
    return s.runtime_pipeline


def _seed(s: ParameterSession, key: str, value: str) -> str:
    if value:
        s.input_seed = _int(key, value, 0, 2**63 - 1)
    return str(s.input_seed)


def _pass_errors(s: ParameterSession, key: str, value: str) -> str:
    if value:
        if value not in PASS_ERROR_MODES:
            raise ValueError(f"{key}: expected one of {list(PASS_ERROR_MODES)}, got {value!r}")
        s.pass_errors = value
    return s.pass_errors


def _timeout(s: ParameterSession, key: str, value: str) -> str:
    if value:
        low, high = STEP_TIMEOUT_RANGE
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not low <= seconds <= high:
            raise ValueError(f"{key}: expected seconds in [{low:g}, {high:g}], got {value!r}")
        s.engine.step_timeout = seconds
    return "none" if s.engine.step_timeout is None else f"{s.engine.step_timeout:g}"


def _workers(s: ParameterSession, key: str, value: str) -> str:
    if value:
        s.engine.resize(_int(key, value, 1, MAX_WORKERS))
    return str(s.engine.stats()["workers"])


def _stats(s: ParameterSession, key: str, value: str) -> str:
    del key, value
    return json.dumps(s.engine.stats(), sort_keys=True)


def _validate(s: ParameterSession, key: str, value: str) -> str:
    seed = _int(key, value, 0, 2**63 - 1) if value else s.input_seed
    return json.dumps(s.engine.validate(s.initial, s.state, seed), sort_keys=True)


def _set_module(s: ParameterSession, key: str, value: str) -> str:
    """For tests of validation: make ``value`` (HLO text) the current module."""
    if not value.strip():
        raise ValueError(f"{key}: expected HLO module text, got nothing")
    s.state = s.engine.load(value)
    return str(s.state.op_count)


def _settle_for(s: ParameterSession, key: str, value: str) -> str:
    """For tests of fairness: a worker replies, then stays busy ``value`` seconds."""
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{key}: expected seconds, got {value!r}") from None
    s.engine.request("settle_for", seconds)
    return value


PARAMETERS: dict[str, Callable[[ParameterSession, str, str], str]] = {
    "xla.runtime.repetitions": _repetitions,
    "xla.runtime.pipeline": _pipeline,
    "xla.inputs.seed": _seed,
    "xla.pass_errors": _pass_errors,
    "xla.step_timeout": _timeout,
    "xla.engine.workers": _workers,
    "xla.engine.stats": _stats,
    "xla.validate": _validate,
    **({"xla.debug.set_module": _set_module, "xla.debug.settle_for": _settle_for} if _TEST_HOOKS else {}),
}


def handle_parameter(session: ParameterSession, key: str, value: str) -> str | None:
    """The reply to ``key``, or None if it is not an xla-v0 parameter."""
    handler = PARAMETERS.get(key)
    return None if handler is None else handler(session, key, value)
