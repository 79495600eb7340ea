"""Is a SQLite store file whole, and which of its rows can still be read?

``python -m xla_service.store verify`` checks the file before its rows: a
file with pages overwritten or cut short makes SQLite raise "database disk
image is malformed" on the first read that meets the damage. :func:`check_file`
says instead what SQLite's ``PRAGMA quick_check`` found (the pages it names),
whether the file is shorter than its header says, and how many rows of each
table can be read (:func:`read_rows` steps over unreadable rowid ranges);
``salvage.py`` copies those rows into a new file.
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TABLES", "FileCheck", "TableScan", "check_file", "connect_damaged", "is_damage", "read_rows"]

#: The store's tables (``sql.py``), in the order they are checked and copied.
TABLES = ("meta", "states", "results")
_HEADER = b"SQLite format 3\x00"
_CORRUPT, _NOTADB = 11, 26
_FIRST_ROWID, _LAST_ROWID = -(2**63), 2**63 - 1
#: Rows read per query while none fails; around damage they are read one by one.
_BATCH = 256


def is_damage(error: BaseException) -> bool:
    """Whether a SQLite error says the file is damaged (not locked, not a passing I/O error)."""
    if not isinstance(error, sqlite3.DatabaseError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_CORRUPT, _NOTADB)
    text = str(error)
    return "malformed" in text or "not a database" in text


def connect_damaged(path: Path) -> sqlite3.Connection:
    """A connection that only reads ``path``, and reads a file cut short up to where it ends.

    (``writable_schema`` makes SQLite use the pages present instead of refusing a
    file shorter than its header says; ``query_only`` keeps it from writing.)
    """
    db = sqlite3.connect(str(path), isolation_level=None)
    db.execute("PRAGMA query_only=ON")
    db.execute("PRAGMA writable_schema=ON")
    return db


@dataclass
class TableScan:
    """What reading one table found: rows read, rows its indexes count, rowid ranges skipped."""

    name: str
    read: int = 0
    expected: int | None = None
    skipped: list[tuple[int, int]] = field(default_factory=list)
    error: str | None = None

    @property
    def lost(self) -> int | None:
        """Rows that could not be read (None when no index could count them)."""
        if self.expected is None:
            return None if self.error else 0
        return max(self.expected - self.read, 0)

    @property
    def damaged(self) -> bool:
        return self.error is not None

    def describe(self) -> str:
        if not self.damaged:
            return f"table {self.name}: intact, {self.read} rows"
        lost = "an unknown number" if self.lost is None else str(self.lost)
        ranges = ", ".join(_span(a, b) for a, b in self.skipped[:8])
        more = f" (+{len(self.skipped) - 8} more)" if len(self.skipped) > 8 else ""
        where = f"; unreadable rowids {ranges}{more}" if ranges else ""
        return f"table {self.name}: DAMAGED, {self.read} rows readable, {lost} lost{where} ({self.error})"


def _span(first: int, last: int) -> str:
    a = "first" if first == _FIRST_ROWID else str(first)
    b = "last" if last == _LAST_ROWID else str(last)
    return a if first == last else f"{a}-{b}"


@dataclass
class FileCheck:
    """What :func:`check_file` found in a store file."""

    path: Path
    problems: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    tables: dict[str, TableScan] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        if self.ok:
            return f"{self.path}: the file is intact"
        lines = [f"{self.path}: the file is DAMAGED (database disk image is malformed)"]
        if self.pages:
            lines.append("pages SQLite names as damaged or pointing to damage: " + ", ".join(map(str, self.pages)))
        lines += [f"  {p}" for p in self.problems[:20]]
        if len(self.problems) > 20:
            lines.append(f"  ... {len(self.problems) - 20} more")
        lines += [scan.describe() for scan in self.tables.values()]
        return "\n".join(lines)


def check_file(path: Path) -> FileCheck:
    """Check ``path`` (a SQLite store file); on damage, scan each table for what can be read."""
    check = FileCheck(Path(path))
    check.problems += _header_problems(check.path)
    try:
        db = connect_damaged(check.path)
    except sqlite3.DatabaseError as e:
        check.problems.append(f"SQLite cannot open the file: {e}")
        return check
    try:
        check.problems += _quick_check(db)
        check.pages = sorted({int(n) for p in check.problems for n in re.findall(r"page (?:number )?(\d+)", p, re.I)})
        if check.problems:
            for table in TABLES:
                scan = TableScan(table)
                for _ in read_rows(db, scan):
                    pass
                check.tables[table] = scan
    finally:
        db.close()
    return check


def _header_problems(path: Path) -> list[str]:
    with open(path, "rb") as f:
        header = f.read(100)
    size = path.stat().st_size
    if len(header) < 100 or not header.startswith(_HEADER):
        return ["the file's header (page 1) is not SQLite's: overwritten or not a store"]
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    present = size // page_size if page_size else 0
    if page_size and pages > present:
        return [f"the file is cut short: {present} of the {pages} pages its header counts are present "
                f"(pages {present + 1}-{pages} missing)"]
    return []


def _quick_check(db: sqlite3.Connection) -> list[str]:
    """SQLite's ``quick_check`` lines other than "ok".

    SQLite reports what it found, then may raise "malformed" when its scan of
    NOT NULL columns meets the damage: the lines are kept as they are produced
    (a function called on each), so the error does not hide them.
    """
    found: list[str] = []

    def keep(line: object) -> int:
        found.append(str(line))
        return 0

    db.create_function("xla_gym_keep", 1, keep)
    try:
        db.execute("SELECT xla_gym_keep(quick_check) FROM pragma_quick_check").fetchall()
    except sqlite3.DatabaseError as e:
        lines = [line for text in found for line in text.splitlines() if line and not line.startswith("***")]
        return lines + [f"reading the tables fails: {e}"]
    return [line for text in found for line in text.splitlines() if line != "ok" and not line.startswith("***")]


def read_rows(db: sqlite3.Connection, scan: TableScan) -> Iterator[tuple]:
    """Every readable row of table ``scan.name`` in rowid order (values, without the rowid).

    Rows are read in batches; a batch that fails is read again one row at a
    time, and an unreadable range of rowids (a damaged page) is stepped over:
    the next readable rowid is found by probing further and further, then
    back. ``scan`` records what was read and skipped.
    """
    table = scan.name
    scan.expected = _count(db, table)
    try:
        columns = len(db.execute(f"SELECT * FROM {table} LIMIT 0").description)
    except sqlite3.DatabaseError as e:
        scan.error = f"its schema cannot be read: {e}"
        return
    batch = f"SELECT * , rowid FROM {table} WHERE rowid >= ? ORDER BY rowid LIMIT {_BATCH}"
    start: int | None = _FIRST_ROWID
    one_by_one = 0
    while start is not None:
        if not one_by_one:
            try:
                rows = db.execute(batch, (start,)).fetchall()
            except sqlite3.DatabaseError as e:
                scan.error = scan.error or str(e)
                one_by_one = _BATCH
                continue
            for row in rows:
                scan.read += 1
                yield row[:columns]
            start = None if len(rows) < _BATCH else rows[-1][-1] + 1
            continue
        one_by_one -= 1
        rowid = _next_rowid(db, table, start, scan)
        if rowid is None:
            return
        try:
            row = db.execute(f"SELECT * FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
            scan.read += 1
            yield tuple(row)
        except sqlite3.DatabaseError as e:  # its payload (an overflow page) is damaged
            scan.error = scan.error or str(e)
            scan.skipped.append((rowid, rowid))
        start = rowid + 1 if rowid < _LAST_ROWID else None


def _count(db: sqlite3.Connection, table: str) -> int | None:
    """The table's rows as its indexes count them (they may survive the table's damaged pages)."""
    try:
        indexes = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name=?", (table,))]
    except sqlite3.DatabaseError:
        indexes = []
    counts = []
    for source in [f"INDEXED BY {name}" for name in indexes] + ["NOT INDEXED"]:
        try:
            counts.append(int(db.execute(f"SELECT count(*) FROM {table} {source}").fetchone()[0]))
        except sqlite3.DatabaseError:
            pass
    return max(counts) if counts else None


def _next_rowid(db: sqlite3.Connection, table: str, start: int, scan: TableScan) -> int | None:
    """The first rowid >= ``start`` that can be reached, stepping over unreadable ranges; None at the end."""

    def probe(rowid: int) -> tuple[bool, int | None]:
        try:
            row = db.execute(f"SELECT rowid FROM {table} WHERE rowid >= ? ORDER BY rowid LIMIT 1", (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            return False, None
        return True, None if row is None else int(row[0])

    ok, found = probe(start)
    if ok:
        return found
    bad, step = start, 1
    while True:  # further and further: 1, 2, 4, ... rowids on
        good = min(start + step, _LAST_ROWID)
        ok, found = probe(good)
        if ok:
            break
        if good == _LAST_ROWID:
            scan.skipped.append((start, _LAST_ROWID))
            return None
        bad, step = good, step * 2
    while good - bad > 1:  # then back, to the first rowid past the damage
        middle = (bad + good) // 2
        ok, at = probe(middle)
        if ok:
            good, found = middle, at
        else:
            bad = middle
    scan.skipped.append((start, (found - 1) if found is not None else _LAST_ROWID))
    return found
