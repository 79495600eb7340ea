"""The experience store on its own (no XLA): round trips, versions, corruption, size, many writers."""
from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from xla_service.catalog.opcodes import OPCODES
from xla_service.errors import PassCrashedError
from xla_service.passes.analysis import Analysis
from xla_service.passes.cache import MISS, Cache, Failure
from xla_service.store import open_store
from xla_service.store.__main__ import main as store_cli
from xla_service.store.sqlite import ExperienceStore

REPO = Path(__file__).resolve().parents[2]


def _state(tag: str, ops: int = 3) -> Analysis:
    counts = [0] * len(OPCODES)
    counts[OPCODES.index("add")] = ops
    return Analysis(f"HloModule {tag}\nENTRY e {{ }}\n", tuple(counts))


@pytest.fixture
def store(tmp_path):
    s = ExperienceStore(tmp_path / "x.sqlite")
    yield s
    s.close()


def test_every_kind_of_value_round_trips(store, tmp_path):
    a, b = _state("a"), _state("b", 2)
    values = {
        ("load", "text-digest", ""): a,
        ("step", a.digest, "cse"): b,
        ("step", a.digest, "dce"): None,
        ("step", a.digest, "gather_simplifier"): Failure(PassCrashedError, "RET_CHECK failure"),
        ("observation", a.digest, "cost_analysis"): (1.0, 2.0, 3.0, 0.0),
        ("observation", a.digest, "hlo_graph"): '{"nodes": []}',
        ("observation", a.digest, "hlo_proto"): b"\x00\x01proto",
    }
    for key, value in values.items():
        store.put(key, value)
    again = ExperienceStore(tmp_path / "x.sqlite")  # another process would see the same
    for key, value in values.items():
        got = again.get(key)
        assert got == value and type(got) is type(value), key
    assert again.get(("step", a.digest, "algsimp")) is MISS
    assert again.outcomes(a.digest) == {"cse": "changed", "dce": "unchanged", "gather_simplifier": "failed"}
    again.close()


def test_another_jaxlib_never_reads_these_results(tmp_path):
    first = ExperienceStore(tmp_path / "x.sqlite", semantics="jaxlib-0.10.2/engine-1")
    first.put(("step", "d", "cse"), None)
    other = ExperienceStore(tmp_path / "x.sqlite", semantics="jaxlib-0.11.0/engine-1")
    assert other.get(("step", "d", "cse")) is MISS
    assert other.stats()["results_of_other_versions"] == 1
    assert first.get(("step", "d", "cse")) is None


def test_a_corrupt_row_is_detected_ignored_and_deleted(store):
    a, b = _state("a"), _state("b")
    store.put(("step", a.digest, "cse"), b)
    store.put(("observation", a.digest, "hlo_graph"), "graph")
    db = sqlite3.connect(str(store.path))
    db.execute("UPDATE results SET value = ? WHERE arg = 'hlo_graph'", (b"Jtampered",))
    db.execute("UPDATE states SET counts = ? WHERE digest = ?", (b"\x00" * 8, b.digest))
    db.commit()
    assert store.verify() == {"rows": 3, "bad_results": 1, "bad_states": 1}
    assert store.get(("observation", a.digest, "hlo_graph")) is MISS
    assert store.get(("step", a.digest, "cse")) is MISS  # its state is corrupt: a miss, never a wrong state
    assert store.verify(repair=True)["bad_states"] == 1 and store.verify()["bad_states"] == 0


def test_a_file_that_is_not_a_database_is_refused_clearly(tmp_path):
    path = tmp_path / "x.sqlite"
    path.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        ExperienceStore(path)


def test_size_is_bounded_least_recently_used_first(tmp_path):
    store = ExperienceStore(tmp_path / "x.sqlite", max_bytes=200_000)
    big = "x" * 2000
    for i in range(400):
        store.put(("observation", f"d{i:04d}", "hlo_graph"), big + str(i))
    store.evict()
    assert store.size() <= 200_000
    assert store.get(("observation", "d0399", "hlo_graph")) == big + "399"  # the newest stay
    assert store.get(("observation", "d0000", "hlo_graph")) is MISS
    store.close()


def test_the_cache_writes_through_and_reads_back(tmp_path):
    store = ExperienceStore(tmp_path / "x.sqlite")
    first = Cache(backing=store)
    a, b = _state("a"), _state("b")
    computed = []
    assert first.get_or_compute(("step", a.digest, "cse"), lambda: computed.append(1) or b) == b
    second = Cache(backing=ExperienceStore(tmp_path / "x.sqlite"))  # a fresh service
    assert second.get_or_compute(("step", a.digest, "cse"), lambda: computed.append(2) or a) == b
    assert computed == [1] and second.stats()["backing_hits"] == {"step": 1}


_WRITER = """
import sys
from xla_service.catalog.opcodes import OPCODES
from xla_service.passes.analysis import Analysis
from xla_service.store.sqlite import ExperienceStore

store = ExperienceStore(sys.argv[1])
i = int(sys.argv[2])
print("ready", flush=True)
while True:  # every value is a function of its key: a reader can check it
    counts = [0] * len(OPCODES)
    counts[0] = i
    store.put(("step", f"d{i}", "cse"), Analysis("x" * 5000 + str(i), tuple(counts)))
    i += 1
"""


def test_writers_killed_mid_write_never_leave_a_wrong_entry(tmp_path):
    path = tmp_path / "x.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for round_ in range(3):
        writers = [
            subprocess.Popen(
                [sys.executable, "-c", _WRITER, str(path), str(100_000 * (round_ * 2 + w))],
                stdout=subprocess.PIPE, env=env,
            )
            for w in range(2)
        ]
        for w in writers:
            assert w.stdout.readline().strip() == b"ready"
        time.sleep(0.4)
        for w in writers:
            w.send_signal(signal.SIGKILL)
            w.wait()
    store = ExperienceStore(path)
    report = store.verify()
    assert report["bad_results"] == 0 and report["bad_states"] == 0 and report["rows"] > 10
    for (digest, _), _ in store.results("step"):
        i = int(digest[1:])
        state = store.get(("step", digest, "cse"))
        assert state.text == "x" * 5000 + str(i) and state.opcode_counts[0] == i


class _RefusesWal:
    """A connection that SQLite refuses WAL ``refusals`` times, as it does (at once,
    without waiting) to one of several processes opening a store together."""

    def __init__(self, db: sqlite3.Connection, refusals: int) -> None:
        self._db, self.refusals = db, refusals

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "PRAGMA journal_mode=WAL" and self.refusals > 0:
            self.refusals -= 1
            raise sqlite3.OperationalError("database is locked")
        return self._db.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._db, name)


@pytest.mark.parametrize("refusals, opens", [(3, True), (10**6, False)])
def test_opening_a_store_retries_while_sqlite_refuses_wal(tmp_path, monkeypatch, refusals, opens):
    import xla_service.store.sqlite as sqlite_store

    connect = sqlite3.connect
    monkeypatch.setattr(sqlite_store.sqlite3, "connect", lambda *a, **k: _RefusesWal(connect(*a, **k), refusals))
    if opens:
        store = ExperienceStore(tmp_path / "x.sqlite", timeout=5.0)
        store.put(("observation", "d0", "hlo_graph"), "v")
        assert store.get(("observation", "d0", "hlo_graph")) == "v"
        store.close()
    else:  # still refused after the timeout: SQLite's own error
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            ExperienceStore(tmp_path / "y.sqlite", timeout=0.3)


def _write_many(path: str, worker: int) -> None:
    store = ExperienceStore(path)
    for i in range(200):
        store.put(("observation", f"w{worker}-{i}", "hlo_graph"), f"{worker}:{i}")
    store.close()


def test_concurrent_writers_from_many_processes(tmp_path):
    path = str(tmp_path / "x.sqlite")
    ExperienceStore(path).close()
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.starmap(_write_many, [(path, w) for w in range(4)])
    store = ExperienceStore(path)
    assert store.stats()["results"] == {"observation": 800}
    assert store.get(("observation", "w3-199", "hlo_graph")) == "3:199"


def test_the_command_line(tmp_path, capsys):
    path = tmp_path / "x.sqlite"
    store = ExperienceStore(path)
    a, b = _state("a", 5), _state("b", 2)
    store.put(("load", "benchmark-text-digest", ""), a)  # states reach the store as results
    store.put(("step", a.digest, "cse"), b)
    store.put(("step", a.digest, "dce"), None)
    store.put(("step", a.digest, "simplification"), Failure(PassCrashedError, "RET_CHECK"))
    store.close()
    assert store_cli(["--store", str(path), "stats"]) == 0
    assert '"step": 3' in capsys.readouterr().out
    assert store_cli(["--store", str(path), "verify"]) == 0
    out = tmp_path / "t.npz"
    assert store_cli(["--store", str(path), "export", str(out)]) == 0
    data = np.load(out)
    assert data["state"].shape == (3, len(OPCODES)) and sorted(data["reward"].tolist()) == [0.0, 0.0, 3.0]
    assert data["changed"].sum() == 1 and data["failed"].sum() == 1
    assert str(data["semantics"]).startswith("jaxlib-")
    assert store_cli(["--store", str(path), "clear"]) == 0
    assert ExperienceStore(path).stats()["states"] == 0


def test_the_store_can_be_switched_off(monkeypatch, tmp_path):
    monkeypatch.setenv("XLA_GYM_STORE", "off")
    assert open_store() is None
    monkeypatch.setenv("XLA_GYM_STORE", str(tmp_path / "y.sqlite"))
    assert open_store().path == tmp_path / "y.sqlite"
