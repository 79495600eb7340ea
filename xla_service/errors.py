"""Every error xla-gym raises on purpose, under one root: :class:`XlaGymError`.

Each also derives from the builtin that CompilerGym's wire protocol maps to a
gRPC status (ValueError -> INVALID_ARGUMENT, LookupError -> NOT_FOUND,
TypeError -> FAILED_PRECONDITION, TimeoutError -> DEADLINE_EXCEEDED, anything
else -> INTERNAL), so the client re-raises the matching Python exception with
our message.
"""
from __future__ import annotations

import difflib
from typing import Iterable

__all__ = [
    "XlaGymError",
    "HloParseError",
    "UnknownPassError",
    "PassCrashedError",
    "PassTimeoutError",
    "BenchmarkError",
    "SessionNotFoundError",
    "SessionStateError",
    "ExecutionError",
    "close_matches",
]


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> str:
    """A " Did you mean ...?" suffix naming the closest candidates, or ""."""
    matches = difflib.get_close_matches(word, list(candidates), n=n, cutoff=0.6)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"


class XlaGymError(Exception):
    """Root of every error raised on purpose by xla-gym."""


class HloParseError(XlaGymError, ValueError):
    """HLO text that XLA cannot parse. The message names the line."""


class UnknownPassError(XlaGymError, ValueError):
    """A pass name or action index that is not in the action space."""


class BenchmarkError(XlaGymError, ValueError):
    """A benchmark that cannot be loaded: empty, too large or unreadable."""


class PassCrashedError(XlaGymError, ValueError):
    """XLA failed or aborted while running a pass on this module.

    The worker is replaced and the session keeps the state it had before the
    step. A ValueError, so that CompilerGym's client raises it to the caller
    and keeps the session (it ends the episode, and closes its service, on
    INTERNAL or DEADLINE_EXCEEDED).
    """


class PassTimeoutError(PassCrashedError):
    """A pass ran longer than the per-step timeout; its worker was replaced."""


class SessionNotFoundError(XlaGymError, LookupError):
    """A session id that the service does not hold (ended, or never started)."""


class SessionStateError(XlaGymError, TypeError):
    """A request that the session cannot take in its current state."""


class ExecutionError(XlaGymError, ValueError):
    """A module that XLA cannot compile with its full pipeline or execute.

    A ValueError, like :class:`PassCrashedError`, so that the client raises
    it to the caller (``Runtime``, validation) and the episode goes on.
    """
