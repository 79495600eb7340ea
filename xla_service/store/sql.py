"""The experience store's logic, on any SQL database (SQLite embedded, PostgreSQL shared).

Two tables. ``states``: a state's compressed module text and opcode counts, by
digest. ``results``: what the engine computed, by ``(semantics, kind, digest,
argument)``: a load (benchmark text digest -> state), a step (state digest and
pass -> next state, "unchanged", or XLA's failure), a deterministic observation
(state digest and name -> value). ``semantics`` (``catalog.semantics_key()``:
jaxlib version, engine semantics, pass catalog, op count rule) is part of
every key, so another jaxlib never reads these results. Each row carries a
checksum; a row that does not match is ignored and deleted. A database that
is damaged (``is_damage``: a SQLite file with pages overwritten) is dropped at
the first failed read or write, with one warning: every result is recomputed
from then on, never read wrong (``verify --repair`` salvages it). Size is bounded:
past ``max_bytes`` the least recently used rows go. A dialect (``sqlite.py``,
``postgres.py``) connects and names the few statements that differ.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from xla_service.catalog import semantics_key
from xla_service.passes.analysis import Analysis
from xla_service.passes.cache import MISS, Key
from xla_service.store.codec import (
    CorruptRow,
    checksum,
    decode_value,
    deferred_state,
    encode_state,
    encode_value,
)

__all__ = ["SqlStore", "DEFAULT_MAX_BYTES", "SCHEMA_VERSION"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 8 * 2**30
SCHEMA_VERSION = 1
#: A row's last use is refreshed when older than this (a write per read would serialize readers).
_TOUCH_SECONDS = 3600.0
#: Eviction is checked every this many writes.
_CHECK_EVERY = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS states (
    digest TEXT PRIMARY KEY, text {bytes} NOT NULL, counts {bytes} NOT NULL,
    checksum {bytes} NOT NULL, used {float} NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    semantics TEXT NOT NULL, kind TEXT NOT NULL, digest TEXT NOT NULL, arg TEXT NOT NULL,
    value {bytes} NOT NULL, checksum {bytes} NOT NULL, used {float} NOT NULL,
    PRIMARY KEY (semantics, kind, digest, arg));
CREATE INDEX IF NOT EXISTS results_used ON results (used);
CREATE INDEX IF NOT EXISTS states_used ON states (used)
"""


class SqlStore:
    """A :class:`~xla_service.passes.cache.Backing` on a SQL database (see the module doc).

    Subclasses connect (``self._db``, whose ``execute`` returns a cursor) and
    name their dialect's differences; then they call :meth:`_setup`.
    """

    #: The dialect's parameter placeholder (the statements here are written with ``?``).
    placeholder = "?"
    #: The dialect's errors: a read or write that fails is a miss, never a crash.
    database_errors: tuple[type[Exception], ...] = ()
    BEGIN = "BEGIN IMMEDIATE"
    UPSERT_RESULT = "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?)"
    INSERT_STATE = "INSERT OR IGNORE INTO states VALUES (?, ?, ?, ?, ?)"
    INSERT_META = "INSERT OR IGNORE INTO meta VALUES ('schema', ?)"
    BYTES = "BLOB"
    FLOAT = "REAL"

    def __init__(self, location: str, max_bytes: int = DEFAULT_MAX_BYTES, semantics: str | None = None) -> None:
        #: Where it is (a path, or a server URL without its password), for messages.
        self.location = location
        self.max_bytes = max_bytes
        self.semantics = semantics or semantics_key()
        self._lock = threading.Lock()
        self._db: Any = None
        self._writes = 0
        self.errors = 0  # reads or writes that failed (locked past the timeout, I/O errors)
        #: Why the store is no longer used (its database is damaged), or None.
        self.unusable: str | None = None

    def _setup(self) -> None:
        for statement in _SCHEMA.format(bytes=self.BYTES, float=self.FLOAT).split(";"):
            if statement.strip():
                self._exec(statement)
        self._exec(self.INSERT_META, (str(SCHEMA_VERSION),))

    def _exec(self, statement: str, params: tuple[Any, ...] = ()) -> Any:
        if self.placeholder != "?":
            statement = statement.replace("?", self.placeholder)
        return self._db.execute(statement, params)

    def size(self) -> int:
        """Bytes the database holds."""
        raise NotImplementedError

    # ---------------------------------------------------------------- Backing

    def get(self, key: Key) -> Any:
        kind, digest, arg = key
        if self.unusable is not None:
            return MISS
        try:
            with self._lock:
                row = self._exec(
                    "SELECT value, checksum, used FROM results WHERE semantics=? AND kind=? AND digest=? AND arg=?",
                    (self.semantics, kind, digest, arg),
                ).fetchone()
            if row is None:
                return MISS
            value, stored, used = row
            if checksum(self._key_bytes(key), value) != stored:
                raise CorruptRow(f"result {key}")
            decoded = decode_value(value, self._state)
            if decoded is MISS:
                return MISS
            self._touch("results", used, "semantics=? AND kind=? AND digest=? AND arg=?", (self.semantics, *key))
            return decoded
        except CorruptRow as e:
            logger.warning("Ignoring a corrupt row of %s: %s", self.location, e)
            self._delete_result(key)
            return MISS
        except self.database_errors as e:
            self._failed("read", e)
            return MISS

    def put(self, key: Key, value: Any) -> None:
        if self.unusable is not None:
            return
        encoded, state = encode_value(value)
        now = time.time()
        try:
            with self._lock:
                self._exec(self.BEGIN)
                try:
                    if state is not None:
                        self._put_state(state, now)
                    self._exec(
                        self.UPSERT_RESULT,
                        (self.semantics, *key, encoded, checksum(self._key_bytes(key), encoded), now),
                    )
                    self._exec("COMMIT")
                except BaseException:
                    self._exec("ROLLBACK")
                    raise
                self._writes += 1
                check = self._writes % _CHECK_EVERY == 0
            if check:
                self.evict()
        except self.database_errors as e:
            self._failed("write", e)

    def is_damage(self, error: BaseException) -> bool:
        """Whether ``error`` says the database itself is damaged (not locked, not a passing failure)."""
        return False

    def _failed(self, what: str, error: BaseException) -> None:
        """A read or write failed: a miss; if the database is damaged, the store is not used again."""
        self.errors += 1
        if not self.is_damage(error):
            logger.debug("Experience store %s failed (%s): %s", what, self.location, error)
            return
        with self._lock:
            first, self.unusable = self.unusable is None, self.unusable or str(error)
        if first:  # once: every later step is recomputed without a word
            logger.warning(
                "Experience store %s is damaged (%s): running without it, results are recomputed. "
                "`python -m xla_service.store verify --repair` salvages what can be read.",
                self.location,
                error,
            )

    # ---------------------------------------------------------------- states

    def _put_state(self, state: Analysis, now: float) -> None:
        text, counts = encode_state(state)
        self._exec(
            self.INSERT_STATE,
            (state.digest, text, counts, checksum(state.digest.encode(), text, counts), now),
        )

    def _state(self, digest: str) -> Any:
        with self._lock:
            row = self._exec("SELECT text, counts, checksum, used FROM states WHERE digest=?", (digest,)).fetchone()
        if row is None:
            return MISS
        text, counts, stored, used = row
        if checksum(digest.encode(), text, counts) != stored:
            raise CorruptRow(f"state {digest[:12]}")
        self._touch("states", used, "digest=?", (digest,))
        return deferred_state(digest, bytes(text), bytes(counts))

    def state(self, digest: str) -> Analysis | None:
        """The stored state ``digest``, or None."""
        found = self._state(digest)
        return None if found is MISS else found

    def results(self, kind: str) -> Iterator[tuple[tuple[str, str], bytes]]:
        """``((digest, argument), encoded value)`` of every valid stored result of ``kind``."""
        with self._lock:
            rows = self._exec(
                "SELECT digest, arg, value, checksum FROM results WHERE semantics=? AND kind=?",
                (self.semantics, kind),
            ).fetchall()
        for digest, arg, value, stored in rows:
            if checksum(self._key_bytes((kind, digest, arg)), value) == stored:
                yield (digest, arg), value

    def outcomes(self, digest: str) -> dict[str, str]:
        """What each stored pass did to state ``digest``: ``changed``, ``unchanged`` or ``failed``."""
        if self.unusable is not None:
            return {}
        try:
            with self._lock:
                rows = self._exec(
                    "SELECT arg, value, checksum FROM results WHERE semantics=? AND kind='step' AND digest=?",
                    (self.semantics, digest),
                ).fetchall()
        except self.database_errors as e:
            self._failed("read", e)
            return {}
        names = {b"S": "changed", b"U": "unchanged", b"F": "failed"}
        return {
            arg: names[value[:1]]
            for arg, value, stored in rows
            if value[:1] in names and checksum(self._key_bytes(("step", digest, arg)), value) == stored
        }

    # ------------------------------------------------------------ maintenance

    def _touch(self, table: str, used: float, where: str, args: tuple[Any, ...]) -> None:
        now = time.time()
        if now - used < _TOUCH_SECONDS:
            return
        try:
            with self._lock:
                self._exec(f"UPDATE {table} SET used=? WHERE {where}", (now, *args))
        except self.database_errors:
            pass  # best effort

    def _delete_result(self, key: Key) -> None:
        try:
            with self._lock:
                self._exec(
                    "DELETE FROM results WHERE semantics=? AND kind=? AND digest=? AND arg=?", (self.semantics, *key)
                )
        except self.database_errors:
            pass

    def evict(self) -> int:
        """Delete the least recently used rows until the store fits ``max_bytes``; how many went."""
        removed = 0
        while self.size() > self.max_bytes:
            with self._lock:
                rows = self._exec("SELECT COUNT(*) FROM results").fetchone()[0]
                cut = self._exec("SELECT used FROM results ORDER BY used LIMIT 1 OFFSET ?", (rows // 10,)).fetchone()
                if cut is None:
                    break
                removed += self._exec("DELETE FROM results WHERE used <= ?", (cut[0],)).rowcount
                removed += self._exec("DELETE FROM states WHERE used <= ?", (cut[0],)).rowcount
        return removed

    def stats(self) -> dict[str, Any]:
        with self._lock:
            kinds = dict(
                self._exec(
                    "SELECT kind, COUNT(*) FROM results WHERE semantics=? GROUP BY kind", (self.semantics,)
                ).fetchall()
            )
            other = self._exec("SELECT COUNT(*) FROM results WHERE semantics!=?", (self.semantics,)).fetchone()[0]
            states = self._exec("SELECT COUNT(*) FROM states").fetchone()[0]
        return {
            "location": self.location,
            "semantics": self.semantics,
            "bytes": self.size(),
            "max_bytes": self.max_bytes,
            "states": states,
            "results": kinds,
            "results_of_other_versions": other,
            "errors": self.errors,
        }

    def verify(self, repair: bool = False) -> dict[str, int]:
        """Check every row's checksum (and states' digests); with ``repair``, delete bad rows (``rows.py``)."""
        from xla_service.store.rows import verify_rows

        return verify_rows(self, repair)

    def clear(self) -> None:
        """Delete everything (every version's results too) and reclaim the space."""
        with self._lock:
            self._exec("DELETE FROM results")
            self._exec("DELETE FROM states")
        self._reclaim()

    def _reclaim(self) -> None:
        """Give the space of deleted rows back (where the database can)."""

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @staticmethod
    def _key_bytes(key: Key) -> bytes:
        return "\0".join(key).encode()
