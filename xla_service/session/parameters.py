"""Session parameters of xla-v0 (``env.send_param(key, value)``), documented in the README.

Per session: ``xla.runtime.repetitions``, ``xla.inputs.seed``,
``xla.pass_errors``, ``xla.validate``, ``xla.debug.set_module``. Per service (every session
shares one engine): ``xla.step_timeout``, ``xla.engine.workers``,
``xla.engine.stats``. An empty value reads a setting without changing it.
"""
from __future__ import annotations

import json
import os
from typing import Callable, Dict, Optional, Protocol

from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import Engine
from xla_service.passes.schema import MAX_RUNTIME_REPETITIONS

__all__ = [
    "ParameterSession",
    "handle_parameter",
    "pass_errors_default",
    "PARAMETERS",
    "MAX_WORKERS",
    "PASS_ERROR_MODES",
    "PASS_ERRORS_VARIABLE",
]

MAX_WORKERS = 64
#: What a step does when XLA fails or aborts in the pass: raise ValueError
#: (the default), or count it as a step without effect.
PASS_ERROR_MODES = ("raise", "no_effect")
#: The service's default for ``xla.pass_errors`` (e.g. for stock tools).
PASS_ERRORS_VARIABLE = "XLA_GYM_PASS_ERRORS"


def pass_errors_default() -> str:
    """``$XLA_GYM_PASS_ERRORS`` if it names a mode, else ``raise``."""
    mode = os.environ.get(PASS_ERRORS_VARIABLE, "raise")
    return mode if mode in PASS_ERROR_MODES else "raise"


class ParameterSession(Protocol):
    """What a parameter reads or sets on a session."""

    engine: Engine
    initial: Analysis
    state: Analysis
    runtime_repetitions: int
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
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not 0 < seconds < float("inf"):
            raise ValueError(f"{key}: expected a positive number of seconds, got {value!r}")
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


PARAMETERS: Dict[str, Callable[[ParameterSession, str, str], str]] = {
    "xla.runtime.repetitions": _repetitions,
    "xla.inputs.seed": _seed,
    "xla.pass_errors": _pass_errors,
    "xla.step_timeout": _timeout,
    "xla.engine.workers": _workers,
    "xla.engine.stats": _stats,
    "xla.validate": _validate,
    "xla.debug.set_module": _set_module,
}


def handle_parameter(session: ParameterSession, key: str, value: str) -> Optional[str]:
    """The reply to ``key``, or None if it is not an xla-v0 parameter."""
    handler = PARAMETERS.get(key)
    return None if handler is None else handler(session, key, value)
