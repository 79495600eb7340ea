"""How errors cross the wire: the gRPC status CompilerGym's client maps back to each type.

Checked in order, as CompilerGym's runtime does: ValueError -> INVALID_ARGUMENT
(the client raises ValueError and keeps the session), LookupError ->
NOT_FOUND, ..., anything else -> INTERNAL (a bug: the client ends the episode).
"""
from __future__ import annotations

import grpc

from xla_service.errors import XlaGymError

__all__ = ["MAX_DETAILS_BYTES", "ServiceClosedError", "status_code_for", "truncate_details"]

MAX_DETAILS_BYTES = 4096
"""Error details are truncated to this many wire bytes: a gRPC client with
default options rejects a reply whose metadata exceeds 8-16 KiB."""


class ServiceClosedError(XlaGymError):
    """The service is shutting down (maps to UNAVAILABLE)."""


_STATUS_CODES: tuple[tuple[type[BaseException], grpc.StatusCode], ...] = (
    (ValueError, grpc.StatusCode.INVALID_ARGUMENT),
    (LookupError, grpc.StatusCode.NOT_FOUND),
    (NotImplementedError, grpc.StatusCode.UNIMPLEMENTED),
    (FileNotFoundError, grpc.StatusCode.UNIMPLEMENTED),
    (TypeError, grpc.StatusCode.FAILED_PRECONDITION),
    (TimeoutError, grpc.StatusCode.DEADLINE_EXCEEDED),
    (ServiceClosedError, grpc.StatusCode.UNAVAILABLE),
)


def status_code_for(error: BaseException) -> grpc.StatusCode:
    """The gRPC status that CompilerGym's client maps back to ``error``'s type."""
    for error_type, code in _STATUS_CODES:
        if isinstance(error, error_type):
            return code
    return grpc.StatusCode.INTERNAL


def truncate_details(text: str, limit: int = MAX_DETAILS_BYTES) -> str:
    """``text`` cut so that its percent-encoded ``grpc-message`` fits ``limit``."""
    size = 0
    for i, char in enumerate(text):
        size += 1 if (" " <= char <= "~" and char != "%") else 3 * len(char.encode())
        if size > limit - 64:
            return text[:i] + " ... [truncated, see the service log]"
    return text
