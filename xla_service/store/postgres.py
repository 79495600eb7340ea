"""The shared experience store: the same tables on a PostgreSQL server, for many machines.

Selected by a URL: ``XLA_GYM_STORE=postgresql://user@host:5432/dbname`` (in
the environment of every service, e.g. through Ray's runtime environment).
Why PostgreSQL (not Redis): the store is relational already (SQLite on one
machine), so the same schema, queries, checksums and export serve a cluster;
every write is a durable transaction, concurrent writers from many nodes are
safe, and the data is not bounded by a server's memory. Start one with
``python -m xla_service.store serve-postgres DIR`` (docs/ray.md) or use any
PostgreSQL 12+ server.
"""
from __future__ import annotations

import re

from xla_service.store.sql import DEFAULT_MAX_BYTES, SqlStore

__all__ = ["PostgresStore"]


class PostgresStore(SqlStore):
    """The store in the PostgreSQL database at ``url`` (tables made if missing)."""

    placeholder = "%s"
    BEGIN = "BEGIN"
    UPSERT_RESULT = (
        "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (semantics, kind, digest, arg) "
        "DO UPDATE SET value = EXCLUDED.value, checksum = EXCLUDED.checksum, used = EXCLUDED.used"
    )
    INSERT_STATE = "INSERT INTO states VALUES (?, ?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING"
    INSERT_META = "INSERT INTO meta VALUES ('schema', ?) ON CONFLICT (key) DO NOTHING"
    BYTES = "BYTEA"
    FLOAT = "DOUBLE PRECISION"

    def __init__(self, url: str, max_bytes: int = DEFAULT_MAX_BYTES, semantics: str | None = None) -> None:
        import psycopg

        self.database_errors = (psycopg.Error,)
        super().__init__(re.sub(r"://([^:@/]*):[^@/]*@", r"://\1:***@", url), max_bytes, semantics)
        self._db = psycopg.connect(url, autocommit=True, connect_timeout=10)
        with self._lock:
            self._db.execute("SELECT pg_advisory_lock(7152394)")  # one schema setup at a time
            try:
                self._setup()
            finally:
                self._db.execute("SELECT pg_advisory_unlock(7152394)")

    def is_damage(self, error: BaseException) -> bool:
        """PostgreSQL's ``data_corrupted`` and ``index_corrupted`` errors."""
        return getattr(error, "sqlstate", None) in ("XX001", "XX002")

    def size(self) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT pg_total_relation_size('results') + pg_total_relation_size('states')"
            ).fetchone()
        return int(row[0])

    def _reclaim(self) -> None:
        with self._lock:
            self._db.execute("VACUUM results")
            self._db.execute("VACUUM states")
