"""A store file with pages overwritten or cut short: verify says so, --repair salvages, the store is dropped once.

The oracle for what can still be read is SQLite itself, one row at a time by
rowid, on the damaged file; the salvage scans instead (``integrity.read_rows``).
"""
from __future__ import annotations

import logging
import os
import random
import re
import sqlite3
from pathlib import Path

import pytest

from xla_service.catalog.opcodes import OPCODES
from xla_service.passes.analysis import Analysis
from xla_service.passes.cache import MISS, Cache
from xla_service.store.__main__ import main as store_cli
from xla_service.store.sqlite import ExperienceStore

PAGE = 4096


def _state(tag: str) -> Analysis:
    counts = [0] * len(OPCODES)
    counts[OPCODES.index("add")] = len(tag)
    return Analysis(f"HloModule {tag}\nENTRY e {{ }}\n", tuple(counts))


def _filled(path: Path) -> dict[tuple[str, str, str], object]:
    """A store of 60 observations (several leaf pages of ``results``) and 10 steps with their states."""
    store = ExperienceStore(path)
    values: dict[tuple[str, str, str], object] = {}
    for i in range(60):
        values[("observation", f"d{i:04d}", "hlo_graph")] = f"{i}:" + "g" * 400
    for i in range(10):
        values[("step", f"s{i:04d}", "cse")] = _state(f"state-{i}")
    for key, value in values.items():
        store.put(key, value)
    store.close()
    return values


def _results_leaves(path: Path) -> list[int]:
    db = sqlite3.connect(str(path))
    pages = [r[0] for r in db.execute("SELECT pageno FROM dbstat WHERE name='results' AND pagetype='leaf' ORDER BY pageno")]
    db.close()
    return pages


def _overwrite(path: Path, page: int) -> None:
    with open(path, "r+b") as f:
        f.seek((page - 1) * PAGE)
        f.write(random.Random(page).randbytes(PAGE))


def _readable_keys(path: Path) -> set[tuple[str, str, str]]:
    """The results SQLite reads one at a time, by rowid (they run from 1, one per key written)."""
    db = sqlite3.connect(str(path))
    db.execute("PRAGMA writable_schema=ON")  # a file cut short: read the pages present
    keys = set()
    for rowid in range(1, 200):
        try:
            row = db.execute("SELECT kind, digest, arg FROM results WHERE rowid=?", (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            continue
        if row is not None:
            keys.add(tuple(row))
    db.close()
    return keys


@pytest.fixture
def damaged(tmp_path):
    """A store whose middle leaf page of ``results`` is overwritten with random bytes."""
    path = tmp_path / "x.sqlite"
    values = _filled(path)
    leaves = _results_leaves(path)
    assert len(leaves) >= 4
    page = leaves[len(leaves) // 2]
    _overwrite(path, page)
    return path, values, page


def test_verify_reports_overwritten_pages_without_a_traceback(damaged, capsys):
    path, values, page = damaged
    readable = _readable_keys(path)
    assert 0 < len(readable) < len(values)  # the page held some rows, not all
    assert store_cli(["--store", str(path), "verify"]) == 1
    out = capsys.readouterr().out
    assert "DAMAGED" in out and f"Page {page}:" in out
    lost = 70 - len(readable)
    assert f"table results: DAMAGED, {len(readable)} rows readable, {lost} lost" in out, out
    assert "table states: intact" in out and "--repair" in out


def test_repair_salvages_the_readable_rows_and_keeps_the_old_file_aside(damaged, capsys):
    path, values, _ = damaged
    readable = _readable_keys(path)
    before = path.read_bytes()
    assert store_cli(["--store", str(path), "verify", "--repair"]) == 0
    out = capsys.readouterr().out
    aside = Path(re.search(r"the damaged file is kept as (\S+)", out).group(1))
    assert aside.parent == path.parent and aside.read_bytes() == before
    assert f"table results: {len(readable)} rows kept, {70 - len(readable)} lost" in out
    assert "table states: 10 rows kept, 0 lost" in out
    store = ExperienceStore(path)
    for key, value in values.items():
        got = store.get(key)
        assert (got == value) if key in readable else (got is MISS), key
    store.close()
    assert store_cli(["--store", str(path), "verify"]) == 0  # the new file is whole


def test_a_file_cut_short_is_reported_and_its_first_pages_salvaged(tmp_path, capsys):
    path = tmp_path / "x.sqlite"
    values = _filled(path)
    pages = path.stat().st_size // PAGE
    os.truncate(path, (pages - 3) * PAGE)
    assert store_cli(["--store", str(path), "verify"]) == 1
    out = capsys.readouterr().out
    assert f"cut short: {pages - 3} of the {pages} pages" in out
    readable = _readable_keys(path)
    assert store_cli(["--store", str(path), "verify", "--repair"]) == 0
    capsys.readouterr()
    store = ExperienceStore(path)
    kept = {key for key in values if store.get(key) is not MISS}
    assert kept and kept <= readable and ("observation", "d0000", "hlo_graph") in kept
    assert all(store.get(key) == values[key] for key in kept)  # what is kept is right
    store.close()


def test_a_file_whose_header_is_overwritten_is_replaced_by_an_empty_store(tmp_path, capsys):
    path = tmp_path / "x.sqlite"
    _filled(path)
    _overwrite(path, 1)
    assert store_cli(["--store", str(path), "verify"]) == 1
    assert "header (page 1) is not SQLite's" in capsys.readouterr().out
    assert store_cli(["--store", str(path), "stats"]) == 1  # a clear message, no traceback
    assert "is damaged" in capsys.readouterr().err
    assert store_cli(["--store", str(path), "verify", "--repair"]) == 0
    assert "0 rows kept, an unknown number lost" in capsys.readouterr().out
    fresh = ExperienceStore(path)
    assert fresh.stats()["results"] == {}
    fresh.close()
    _overwrite(path, 1)  # damaged again within the same second: the first file set aside stays
    assert store_cli(["--store", str(path), "verify", "--repair"]) == 0
    assert len([p for p in tmp_path.glob("x.sqlite.damaged-*") if not p.name.endswith(("-wal", "-shm"))]) == 2


def test_a_damaged_store_is_dropped_with_one_warning_and_results_recomputed(damaged, caplog):
    path, values, _ = damaged
    store = ExperienceStore(path)
    cache = Cache(backing=store)
    computed = []
    with caplog.at_level(logging.WARNING, logger="xla_service.store.sql"):
        for key, value in values.items():
            assert cache.get_or_compute(key, lambda v=value: computed.append(1) or v) == value
        for i in range(5):  # new results: not written, no new warning
            cache.get_or_compute(("observation", f"new{i}", "hlo_graph"), lambda: "new")
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "is damaged" in warnings[0].getMessage()
    assert "verify --repair" in warnings[0].getMessage()
    assert store.unusable and store.outcomes("s0000") == {}
    assert len(computed) >= 70 - len(_readable_keys(path))  # at least the unreadable ones were recomputed
    assert store.errors == 1  # one failed read, then the store was left alone
    store.close()
