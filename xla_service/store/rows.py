"""``verify``'s row check: every row's checksum, and every state's text against its digest.

Works on any :class:`~xla_service.store.sql.SqlStore` (SQLite or PostgreSQL);
a SQLite file's own damage (pages overwritten or cut short) is
``integrity.py``'s, checked before this.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from xla_service.store.codec import CorruptRow, checksum, decode_state

if TYPE_CHECKING:
    from xla_service.store.sql import SqlStore

__all__ = ["verify_rows"]


def verify_rows(store: SqlStore, repair: bool = False) -> dict[str, int]:
    """Check every row's checksum (and states' digests); with ``repair``, delete bad rows."""
    bad_results, bad_states, rows = [], [], 0
    for key, value, stored in _iterate(store, "SELECT semantics, kind, digest, arg, value, checksum FROM results"):
        rows += 1
        if checksum("\0".join(key[1:]).encode(), value) != stored:
            bad_results.append(key)
    for (digest,), (text, counts), stored in _iterate(store, "SELECT digest, text, counts, checksum FROM states", 1, 2):
        rows += 1
        try:
            if checksum(digest.encode(), text, counts) != stored:
                raise CorruptRow(digest)
            decode_state(digest, text, counts)
        except (CorruptRow, Exception):  # noqa: B014  (zlib errors, bad UTF-8: all corrupt)
            bad_states.append(digest)
    if repair:
        with store._lock:
            for semantics, kind, digest, arg in bad_results:
                store._exec(
                    "DELETE FROM results WHERE semantics=? AND kind=? AND digest=? AND arg=?", (semantics, kind, digest, arg)
                )
            for digest in bad_states:
                store._exec("DELETE FROM states WHERE digest=?", (digest,))
    return {"rows": rows, "bad_results": len(bad_results), "bad_states": len(bad_states)}


def _iterate(store: SqlStore, query: str, key_columns: int = 4, value_columns: int = 1) -> Iterator[tuple[Any, ...]]:
    with store._lock:
        rows = store._exec(query).fetchall()
    for row in rows:
        key = tuple(row[:key_columns])
        values = row[key_columns : key_columns + value_columns]
        yield key, (values[0] if value_columns == 1 else tuple(values)), row[-1]
