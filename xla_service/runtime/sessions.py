"""The service's table of live sessions: unguessable ids, one lock per session.

Session ids are 63-bit random numbers (a session can be used only by the
client that started it, which alone learns its id); each session has its own
lock, so that two RPCs on one session never run at once while different
sessions run in parallel; no session method runs under the table's lock.
"""
from __future__ import annotations

import contextlib
import logging
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from xla_service.errors import SessionNotFoundError
from xla_service.runtime.status import ServiceClosedError
from xla_service.session.base import CompilationSession

__all__ = ["SessionTable", "close_quietly", "fork_or_none"]

logger = logging.getLogger(__name__)


@dataclass
class _Entry:
    """A live session and the lock that serializes the RPCs on it."""

    session: CompilationSession
    lock: threading.Lock = field(default_factory=threading.Lock)
    ended: bool = False


class SessionTable:
    """Live sessions by id."""

    def __init__(self) -> None:
        self._sessions: dict[int, _Entry] = {}
        self._sessions_lock = threading.Lock()
        self._closed = False

    @property
    def count(self) -> int:
        """The number of open sessions."""
        with self._sessions_lock:
            return len(self._sessions)

    @contextlib.contextmanager
    def locked(self, session_id: int) -> Iterator[CompilationSession]:
        """Hold ``session_id``'s own lock (not the table's) and yield its session."""
        with self._sessions_lock:
            entry = self._sessions.get(session_id)
        if entry is None:
            raise SessionNotFoundError(f"Session not found: {session_id}")
        with entry.lock:
            if entry.ended:  # Ended while this RPC waited for the lock.
                raise SessionNotFoundError(f"Session not found: {session_id}")
            yield entry.session

    def add(self, session: CompilationSession) -> int:
        """Store a new session under a fresh id; closes it if the service is closed."""
        with self._sessions_lock:
            if not self._closed:
                session_id = secrets.randbits(63)
                while session_id in self._sessions:
                    session_id = secrets.randbits(63)
                self._sessions[session_id] = _Entry(session)
                return session_id
        close_quietly(session, "new")
        raise ServiceClosedError("The service is shutting down")

    def restore(self, session_id: int, backup: CompilationSession) -> None:
        """Put ``backup`` in place of session ``session_id`` (whose lock the caller holds)."""
        with self._sessions_lock:
            entry = self._sessions.get(session_id)
        if entry is None:
            close_quietly(backup, "backup")
            return
        replaced, entry.session = entry.session, backup
        if replaced is not backup:
            close_quietly(replaced, f"{session_id} (restored)")

    def pop(self, session_id: int) -> int:
        """End session ``session_id`` (after its running RPC) if it exists; the sessions left."""
        with self._sessions_lock:
            entry = self._sessions.pop(session_id, None)
            remaining = len(self._sessions)
        if entry is not None:
            _end(entry, session_id)
        return remaining

    def close_all(self) -> int:
        """End every session and refuse new ones; returns how many were open."""
        with self._sessions_lock:
            self._closed = True
            entries = list(self._sessions.items())
            self._sessions.clear()
        for session_id, entry in entries:
            _end(entry, session_id)
        if entries:
            logger.info("Closed %d open sessions", len(entries))
        return len(entries)


def fork_or_none(session: CompilationSession) -> CompilationSession | None:
    """A copy to restore if a batch of actions fails (None if the session cannot fork)."""
    try:
        return session.fork()
    except NotImplementedError:
        return None


def _end(entry: _Entry, session_id: int) -> None:
    """Close an entry already removed from the table, after its running RPC."""
    with entry.lock:
        if entry.ended:
            return
        entry.ended = True
        close_quietly(entry.session, str(session_id))


def close_quietly(session: CompilationSession, name: str) -> None:
    try:
        session.close()
    except Exception:
        logger.warning("Closing session %s raised", name, exc_info=True)
