"""The evaluation protocol's checks on the experience store (``leaderboard/PROTOCOL.md``).

An evaluation must not read what other agents' runs have put in the experience store about the
benchmarks it is scored on (a policy that masks passes from ``PassOutcomes`` would see their
sweeps), so :func:`check_store` classifies the store the evaluation will use (``$XLA_GYM_STORE``,
``xla_service.store``) and refuses a shared one:

- ``off``: no store;
- ``fresh``: a SQLite file other than the machine's default that does not exist yet or holds no
  state and no result (a per-run store);
- ``per-run``: a store recorded as ``fresh`` by this results file's first part (``--resume``);
- ``snapshot``: a SQLite file that this process cannot write (a read-only snapshot: every agent
  that is handed it sees the same, and nothing is added during the run);
- ``shared``: anything else (the machine's default store, a non-empty writable file, a
  ``postgresql://`` server): refused with :class:`SharedStoreError` unless ``--shared-store``
  records the choice.

The verdict goes to a sidecar next to the results, ``RESULTS.store.json`` (:func:`sidecar`), which
``leaderboard.report.summary`` prints and puts in its JSON.
"""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from xla_service.errors import XlaGymError
from xla_service.store import STORE_VARIABLE, default_path, sqlite_path

__all__ = [
    "ALLOWED",
    "MIN_BENCHMARKS",
    "ProtocolError",
    "SharedStoreError",
    "check_store",
    "classify_store",
    "read_store_record",
    "sidecar",
    "store_line",
    "write_store_record",
]

#: Fewer benchmarks than this: an aggregate is flagged as too small a sample to mean
#: much (summaries, tables, the harness's progress line).
MIN_BENCHMARKS = 20
#: The store kinds an evaluation may use without ``--shared-store``.
ALLOWED = ("off", "fresh", "per-run", "snapshot")
_OFF = ("", "off", "none", "0", "false")


class ProtocolError(XlaGymError, ValueError):
    """An evaluation or a table that breaks the leaderboard's protocol (``leaderboard/PROTOCOL.md``)."""


class SharedStoreError(ProtocolError):
    """The evaluation's experience store may hold other agents' knowledge of the test benchmarks."""


def sidecar(results: str | Path) -> Path:
    """``x/results-test.csv`` -> ``x/results-test.store.json``."""
    return Path(results).with_suffix(".store.json")


def _rows(path: Path) -> int:
    """States + results in the SQLite store at ``path`` (0 for a file without the store's tables)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise SharedStoreError(f"Expected a readable SQLite experience store at {path}, got: {error}") from None
    try:
        total = 0
        for table in ("states", "results"):
            if db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone():
                total += int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        return total
    except sqlite3.DatabaseError as error:
        raise SharedStoreError(f"Expected a SQLite experience store at {path}, got: {error}") from None
    finally:
        db.close()


def classify_store(setting: str | None = None, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The store ``setting`` (default ``$XLA_GYM_STORE``) names, as a record: ``kind`` (one of
    ``ALLOWED`` or ``"shared"``), ``location``, ``rows`` and ``why``. ``previous``: the record of
    this results file's earlier part (``--resume``), whose fresh store is this run's own."""
    value = os.environ.get(STORE_VARIABLE, "default") if setting is None else setting
    if value.strip().lower() in _OFF:
        return {"kind": "off", "location": None, "rows": 0, "why": f"{STORE_VARIABLE}={value!r}"}
    path = sqlite_path(value)
    if path is None:
        return {"kind": "shared", "location": value.split("@")[-1], "rows": None,
                "why": "a database server, which any run may write to"}
    location = str(path.resolve())
    if not path.exists():
        return {"kind": "fresh", "location": location, "rows": 0, "why": "the file does not exist yet"}
    rows = _rows(path)
    if not os.access(path, os.W_OK):
        return {"kind": "snapshot", "location": location, "rows": rows, "why": "read-only to this process"}
    if previous and previous.get("kind") in ("fresh", "per-run") and previous.get("location") == location:
        return {"kind": "per-run", "location": location, "rows": rows, "why": "fresh when this results file began"}
    if path.resolve() == default_path().resolve():
        return {"kind": "shared", "location": location, "rows": rows,
                "why": "the machine's default store, which every run on the machine writes to"}
    if rows == 0:
        return {"kind": "fresh", "location": location, "rows": 0, "why": "the store is empty"}
    return {"kind": "shared", "location": location, "rows": rows,
            "why": f"it already holds {rows} states and results written by other runs"}


def read_store_record(results: str | Path) -> dict[str, Any] | None:
    """The store record next to ``results``, or None when it has none (results made before the protocol)."""
    path = sidecar(results)
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    if not isinstance(record, dict) or "kind" not in record:
        raise ProtocolError(f"Expected a store record with a 'kind' in {path}, got {record!r}")
    return record


def check_store(results: str | Path, shared_store: bool, resume: bool = False,
                setting: str | None = None) -> dict[str, Any]:
    """The record of the store an evaluation into ``results`` will use; raises :class:`SharedStoreError`
    for a shared store unless ``shared_store`` (``--shared-store``), which the record keeps."""
    previous = read_store_record(results) if resume else None
    record = classify_store(setting, previous)
    record["shared_store_flag"] = shared_store
    if record["kind"] not in ALLOWED and not shared_store:
        raise SharedStoreError(
            f"Expected an experience store of this run alone ({', '.join(ALLOWED)}), got a shared one at "
            f"{record['location']}: {record['why']}. A policy that reads the store would see other agents' "
            f"work on these benchmarks (leaderboard/PROTOCOL.md). Set {STORE_VARIABLE}=off, or a new file "
            f"per run, or a read-only snapshot; or pass --shared-store to run anyway and record the choice "
            f"in {sidecar(results)}"
        )
    return record


def write_store_record(results: str | Path, record: dict[str, Any]) -> Path:
    """Write ``record`` to the sidecar of ``results``; its path."""
    path = sidecar(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def store_line(results: str | Path) -> str:
    """One line for a summary: the store the evaluation of ``results`` used."""
    record = read_store_record(results)
    if record is None:
        return f"store: not recorded ({Path(results).name} has no {sidecar(results).name})"
    flag = " (--shared-store: other runs' knowledge of these benchmarks was readable)" if record["kind"] == "shared" else ""
    return f"store: {record['kind']}{flag}, {record.get('location') or 'none'}: {record.get('why', '')}"
