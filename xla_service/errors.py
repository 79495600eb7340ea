"""Every error xla-gym raises on purpose, under one root: :class:`XlaGymError`.

Each also derives from the builtin that CompilerGym's wire protocol maps to a
gRPC status (ValueError -> INVALID_ARGUMENT, LookupError -> NOT_FOUND,
TimeoutError -> DEADLINE_EXCEEDED,
anything else -> INTERNAL), so the client re-raises the matching Python
exception with our message. Everything a module, a pass or a resource limit
causes is a ValueError: CompilerGym's client raises it to the caller and keeps
the session, where any other status makes it end the episode or restart the
service (and with it every other client's sessions). INTERNAL means a bug.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "XlaGymError",
    "HloParseError",
    "UnknownPassError",
    "PassCrashedError",
    "PassTimeoutError",
    "BenchmarkError",
    "ResourceLimitError",
    "SessionNotFoundError",
    "PermissionDeniedError",
    "ExecutionError",
    "ForkedClientError",
    "StoredStateError",
    "close_matches",
]


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> str:
    """A " Did you mean ...?" suffix naming the closest candidates, or ""."""
    matches = difflib.get_close_matches(word, list(candidates), n=n, cutoff=0.6)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"


class XlaGymError(Exception):
    """Root of every error raised on purpose by xla-gym.

    ``transient``: the failure says nothing about the module or the pass (a
    killed worker, a full disk), so it is never cached and a retry may succeed.
    """

    transient: bool = False

    def __init__(self, message: str = "", transient: bool | None = None) -> None:
        super().__init__(message)
        if transient is not None:
            self.transient = transient


class HloParseError(XlaGymError, ValueError):
    """HLO text that XLA cannot parse or accept. The message names the line."""


class UnknownPassError(XlaGymError, ValueError):
    """A pass name or action that is not in the action space."""


class BenchmarkError(XlaGymError, ValueError):
    """A benchmark that cannot be loaded: empty, too large, unreadable, or rejected by XLA."""


class ResourceLimitError(XlaGymError, ValueError):
    """A module or request beyond a documented limit (size, memory, inputs).

    A ValueError (INVALID_ARGUMENT), not RESOURCE_EXHAUSTED: CompilerGym's
    client turns RESOURCE_EXHAUSTED into a service error and restarts the
    service, which would end every other client's sessions.
    """


class PassCrashedError(XlaGymError, ValueError):
    """XLA failed or aborted while running a pass on this module.

    The worker is replaced and the session keeps the state it had before the
    step. A ValueError, so that CompilerGym's client raises it to the caller
    and keeps the session (it ends the episode, and closes its service, on
    INTERNAL or DEADLINE_EXCEEDED).
    """


class PassTimeoutError(PassCrashedError):
    """A pass ran longer than the per-step timeout; its worker was replaced."""

    transient = True


class SessionNotFoundError(XlaGymError, LookupError):
    """A session id that the service does not hold (ended, or never started)."""


class PermissionDeniedError(XlaGymError, ValueError):
    """A service-wide setting sent without the token of the client that
    launched the service. A ValueError, so that the stock client raises it to
    the caller and keeps the session."""


class ExecutionError(XlaGymError, ValueError):
    """A module that XLA cannot compile with its full pipeline or execute.

    A ValueError, like :class:`PassCrashedError`, so that the client raises
    it to the caller (``Runtime``, validation) and the episode goes on.
    """


class ForkedClientError(XlaGymError, RuntimeError):
    """A client made in a process forked from one that had used gRPC: gRPC does not
    survive ``fork()`` (its threads stay behind), and the child may hang for ever."""


class StoredStateError(XlaGymError):
    """A state read from the experience store whose text, made on first use, does not
    hash to its digest (a row written wrong: its checksum matched). Never cached; a bug
    or a forged store, so INTERNAL."""

    transient = True
