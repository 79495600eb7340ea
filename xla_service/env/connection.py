"""Connections to an xla-gym service: tokens for remote services and service-wide settings.

Two tokens, both optional on loopback (README, "Service behaviour"):

- the **admin token**: a client that launches a service gives it a fresh
  random token (``$XLA_GYM_ADMIN_TOKEN`` in the service's environment) and
  presents it with service-wide settings (``xla.step_timeout``,
  ``xla.engine.workers``); no other client can change them;
- the **auth token**: a service that listens beyond loopback requires every
  RPC to carry ``authorization: Bearer <token>``. :class:`TokenConnection`
  adds it to a stock ``CompilerGymServiceConnection``.
"""
from __future__ import annotations

import collections
import os
import secrets
import time
from typing import Any

import grpc
from compiler_gym.service import CompilerGymServiceConnection, ConnectionOpts
from compiler_gym.service.connection import GRPC_CHANNEL_OPTIONS, Connection

__all__ = [
    "ADMIN_TOKEN_VARIABLE",
    "AUTH_TOKEN_VARIABLE",
    "ADMIN_TOKEN_PARAMETER",
    "TokenConnection",
    "new_admin_token",
]

ADMIN_TOKEN_VARIABLE = "XLA_GYM_ADMIN_TOKEN"
AUTH_TOKEN_VARIABLE = "XLA_GYM_AUTH_TOKEN"
#: The parameter that presents the admin token (``runtime/servicer.py``).
ADMIN_TOKEN_PARAMETER = "service.admin_token"


def new_admin_token() -> str:
    return secrets.token_urlsafe(32)


class _CallDetails(
    collections.namedtuple(
        "_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")
    ),
    grpc.ClientCallDetails,
):
    """The details of a call, with our metadata added."""


class _Bearer(grpc.UnaryUnaryClientInterceptor):
    """Adds ``authorization: Bearer <token>`` to every call."""

    def __init__(self, token: str) -> None:
        self._metadata = (("authorization", f"Bearer {token}"),)

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        with_token = _CallDetails(
            details.method,
            details.timeout,
            tuple(details.metadata or ()) + self._metadata,
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )
        return continuation(with_token, request)


class _TokenChannelConnection(Connection):
    """A stock ``Connection`` to ``url`` over a channel that carries the auth token."""

    def __init__(self, url: str, token: str, rpc_init_max_seconds: float) -> None:
        deadline = time.time() + rpc_init_max_seconds
        wait = 0.1
        while True:
            channel = grpc.insecure_channel(url, options=GRPC_CHANNEL_OPTIONS)
            try:
                grpc.channel_ready_future(channel).result(timeout=wait)
                break
            except grpc.FutureTimeoutError:
                channel.close()
                if time.time() > deadline:
                    raise TimeoutError(f"Failed to connect to {url} after {rpc_init_max_seconds:.1f} s") from None
                wait *= 1.2
        super().__init__(grpc.intercept_channel(channel, _Bearer(token)), url)

    def __repr__(self) -> str:
        return f"Connection to unmanaged service {self.url} (with a token)"


class TokenConnection(CompilerGymServiceConnection):
    """``CompilerGymServiceConnection`` to a ``host:port`` service that requires a token."""

    def __init__(self, endpoint: str, opts: ConnectionOpts | None, token: str) -> None:
        self.token = token
        super().__init__(endpoint, opts)

    def _establish_connection(self) -> None:
        self.connection = _TokenChannelConnection(
            str(self.endpoint), self.token, self.opts.rpc_init_max_seconds
        )
        self.stub = self.connection.stub


def auth_token_from_environment() -> str:
    return os.environ.get(AUTH_TOKEN_VARIABLE, "").strip()
