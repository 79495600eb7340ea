"""``verify --repair`` on a damaged SQLite store file: copy what can be read into a new file.

Every row of every table that SQLite can still read (``integrity.read_rows``
steps over damaged pages) goes into a fresh store file; the damaged file
(with its ``-wal`` and ``-shm``) is renamed aside, kept for a look or a
better tool, and the new file takes its place. The rows' checksums are then
checked as always (``verify``), so a row that reads but was changed is
dropped too. Stop the services that use the store first: one that keeps it
open goes on writing to the file set aside.
"""
from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from xla_service.store.integrity import TABLES, TableScan, connect_damaged, read_rows
from xla_service.store.sqlite import ExperienceStore

__all__ = ["Salvage", "salvage_file"]

_SIDECARS = ("-wal", "-shm")


@dataclass
class Salvage:
    """What :func:`salvage_file` kept: rows per table, and where the damaged file went."""

    path: Path
    aside: Path
    tables: dict[str, TableScan] = field(default_factory=dict)

    def describe(self) -> str:
        lines = [f"repaired {self.path}: the damaged file is kept as {self.aside}"]
        for scan in self.tables.values():
            lost = "an unknown number" if scan.lost is None else str(scan.lost)
            lines.append(f"table {scan.name}: {scan.read} rows kept, {lost} lost")
        return "\n".join(lines)

    def counts(self) -> dict[str, dict[str, int | None]]:
        return {name: {"kept": s.read, "lost": s.lost} for name, s in self.tables.items()}


def salvage_file(path: Path, semantics: str | None = None) -> Salvage:
    """Copy the readable rows of the store file ``path`` into a new one at ``path``; the old one aside."""
    path = Path(path)
    fresh = path.with_name(path.name + ".repairing")
    _remove(fresh)
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}")
    for n in range(1, 1000):  # never over an earlier one
        if not aside.exists():
            break
        aside = aside.with_name(f"{aside.name.split('~')[0]}~{n}")
    report = Salvage(path, aside)
    target = ExperienceStore(fresh, semantics=semantics or "salvage")
    try:
        source = connect_damaged(path)
    except sqlite3.DatabaseError as e:
        source = None
        for table in TABLES:
            report.tables[table] = TableScan(table, error=f"SQLite cannot open the file: {e}")
    try:
        if source is not None:
            for table in TABLES:
                report.tables[table] = _copy(source, target, table)
    finally:
        if source is not None:
            source.close()
        target.close()
    for suffix in ("", *_SIDECARS):
        if Path(f"{path}{suffix}").exists():
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
    os.replace(fresh, path)
    for suffix in _SIDECARS:
        _remove(Path(f"{fresh}{suffix}"))
    return report


def _copy(source: sqlite3.Connection, target: ExperienceStore, table: str) -> TableScan:
    scan = TableScan(table)
    db = target._db  # the salvage writes raw rows, checksums and all
    db.execute("BEGIN")
    try:
        for row in read_rows(source, scan):
            try:
                db.execute(f"INSERT OR IGNORE INTO {table} VALUES ({', '.join('?' * len(row))})", row)
            except sqlite3.IntegrityError:  # read, but its values are not a row of the store (NULLs)
                scan.read -= 1
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return scan


def _remove(path: Path) -> None:
    for suffix in ("", *_SIDECARS):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
