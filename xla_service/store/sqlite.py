"""The embedded experience store: one SQLite file in WAL mode, shared by every process on a machine.

Why SQLite: it is in Python's standard library (nothing to install or run),
its WAL mode lets many processes read while one writes, every write is a
transaction (a writer killed mid-write leaves the previous state), and it
bounds nothing by itself (LMDB needs a fixed map size and a package). The
logic is ``sql.py``'s; across machines, ``postgres.py``.
"""
from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from xla_service.store.integrity import is_damage
from xla_service.store.sql import DEFAULT_MAX_BYTES, SqlStore

__all__ = ["ExperienceStore", "DEFAULT_MAX_BYTES"]


class ExperienceStore(SqlStore):
    """The store in the SQLite file ``path`` (made if missing)."""

    database_errors = (sqlite3.Error,)

    def __init__(
        self,
        path: os.PathLike | str,
        max_bytes: int = DEFAULT_MAX_BYTES,
        semantics: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(str(self.path), max_bytes, semantics)
        self._db = sqlite3.connect(str(self.path), timeout=timeout, check_same_thread=False, isolation_level=None)
        _retry_while_locked(lambda: self._db.execute("PRAGMA journal_mode=WAL"), timeout)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._setup()

    def is_damage(self, error: BaseException) -> bool:
        return is_damage(error)

    def size(self) -> int:
        """Bytes the database holds (pages in use)."""
        with self._lock:
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            free = self._db.execute("PRAGMA freelist_count").fetchone()[0]
            page = self._db.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * page)

    def _reclaim(self) -> None:
        with self._lock:
            self._db.execute("VACUUM")


def _retry_while_locked(statement: Callable[[], object], timeout: float) -> None:
    """Run ``statement``, again while SQLite says the database is locked, for ``timeout`` s.

    Switching to WAL needs an exclusive lock. When several processes open a
    store at once, SQLite may refuse one at once ("database is locked")
    instead of waiting, where waiting could deadlock them (a connection that
    holds a shared lock and wants the exclusive one): the statement is retried
    after its locks are released.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            statement()
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
