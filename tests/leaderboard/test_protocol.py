"""The evaluation protocol (leaderboard/PROTOCOL.md): a shared experience store is refused unless
recorded, and seeds must be the ones declared before the run. Real SQLite stores, no env."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from leaderboard.declared import SeedDeclarationError, check_declared, declare, parse_seeds
from leaderboard.protocol import (
    SharedStoreError,
    check_store,
    classify_store,
    sidecar,
    write_store_record,
)
from tests.leaderboard.results_files import GPT2, write_results
from xla_service.errors import XlaGymError
from xla_service.store import ExperienceStore


def _store(path: Path, rows: int) -> str:
    """A real experience store at ``path`` holding ``rows`` observations (another run's work)."""
    store = ExperienceStore(path)
    for i in range(rows):
        store.put(("observation", f"d{i:04d}", "hlo_graph"), f"graph {i}")
    store.close()
    return str(path)


def test_a_store_of_this_run_alone_is_accepted_and_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert classify_store("off")["kind"] == "off"
    assert classify_store(str(tmp_path / "new.sqlite"))["kind"] == "fresh"  # not created yet
    assert classify_store(_store(tmp_path / "empty.sqlite", 0))["kind"] == "fresh"
    snapshot = _store(tmp_path / "snapshot.sqlite", 3)
    os.chmod(snapshot, 0o444)
    try:
        if os.access(snapshot, os.W_OK):  # root writes read-only files: what this process may write decides
            real_access = os.access
            monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == snapshot else real_access(p, mode))
        assert classify_store(snapshot) | {"why": ""} == {"kind": "snapshot", "location": str(Path(snapshot).resolve()),
                                                          "rows": 3, "why": ""}
    finally:
        os.chmod(snapshot, 0o644)


def test_the_harness_refuses_a_shared_store_unless_the_flag_records_it(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    used = _store(tmp_path / "used.sqlite", 2)
    results = tmp_path / "results.csv"
    with pytest.raises(SharedStoreError, match="holds 2 states and results") as refused:
        check_store(results, shared_store=False, setting=used)
    assert "--shared-store" in str(refused.value) and isinstance(refused.value, XlaGymError)
    # the machine's default store is shared even when empty: every run on the machine writes to it
    default = _store(tmp_path / "cache" / "xla-gym" / "experience.sqlite", 0)
    with pytest.raises(SharedStoreError, match="default store"):
        check_store(results, shared_store=False, setting=default)
    with pytest.raises(SharedStoreError, match="database server"):
        check_store(results, shared_store=False, setting="postgresql://user:secret@db/xla")
    record = check_store(results, shared_store=True, setting=used)
    assert record["kind"] == "shared" and record["shared_store_flag"] is True
    # the harness itself: refused before any env starts, no results written
    from leaderboard.harness import eval_xla_opcount_policy

    monkeypatch.setenv("XLA_GYM_STORE", used)
    with pytest.raises(SharedStoreError):
        eval_xla_opcount_policy(lambda env: None, ["--split=train", "--max_benchmarks=1", f"--leaderboard_results={results}"])
    assert not results.exists() and not sidecar(results).exists()


def test_a_resumed_run_keeps_its_own_store_and_the_summary_shows_the_store(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    own = tmp_path / "run.sqlite"
    results = Path(write_results(tmp_path / "results.csv", {GPT2: 100}))
    write_store_record(results, check_store(results, shared_store=False, setting=str(own)))
    _store(own, 4)  # the run's first part filled its own store
    assert check_store(results, shared_store=False, resume=True, setting=str(own))["kind"] == "per-run"
    with pytest.raises(SharedStoreError):  # not resuming: a new run finds someone's store
        check_store(results, shared_store=False, setting=str(own))
    write_store_record(results, check_store(results, shared_store=True, setting=str(own)))
    from leaderboard.report.summary import main as summary_main

    json_path = tmp_path / "summary.json"
    assert summary_main([str(results), "--json", str(json_path)]) == 0
    assert "store: shared (--shared-store" in capsys.readouterr().out
    assert json.loads(json_path.read_text())["stores"][str(results)]["kind"] == "shared"


def test_seeds_parse_and_a_declared_batch_is_never_changed(tmp_path):
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4] and parse_seeds("0,2,7-8") == [0, 2, 7, 8]
    with pytest.raises(ValueError, match="expected seeds"):
        parse_seeds("4-0")
    path = declare(tmp_path, "ppo-seed*", [0, 1, 2])
    assert declare(tmp_path, "ppo-seed*", [2, 1, 0]) == path  # the same declaration, again: fine
    with pytest.raises(SeedDeclarationError, match="never changed"):
        declare(tmp_path, "ppo-seed*", [0, 1, 2, 3, 4])
    from leaderboard.declared import main as declare_main

    with pytest.raises(SystemExit):  # a learned row: at least 5 seeds
        declare_main([str(tmp_path), "gnn-seed*", "0-2", "--learned"])
    assert declare_main([str(tmp_path), "gnn-seed*", "0-4", "--learned"]) == 0
    assert [b["pattern"] for b in json.loads(path.read_text())["batches"]] == ["ppo-seed*", "gnn-seed*"]


def test_results_whose_seeds_differ_from_the_declaration_are_refused(tmp_path, capsys):
    declare(tmp_path, "ppo-seed*", [0, 1, 2])
    files = [write_results(tmp_path / f"ppo-seed{s}-test.csv", {GPT2: 100 - s}) for s in (0, 1, 2, 3)]
    with pytest.raises(SeedDeclarationError, match=r"extra: \[3\], missing: \[\]"):
        check_declared(files)
    with pytest.raises(SeedDeclarationError, match=r"extra: \[\], missing: \[2\]"):
        check_declared(files[:2])
    check_declared(files[:3])  # exactly the declared seeds
    check_declared([write_results(tmp_path / "other-seed9-test.csv", {GPT2: 90})])  # in no batch: as before

    from leaderboard.report.seeds import main as seeds_main
    from leaderboard.report.summary import main as summary_main

    base = write_results(tmp_path / "base.csv", {GPT2: 100})
    with pytest.raises(SystemExit):
        seeds_main(["--baseline", base, f"PPO={tmp_path}/ppo-seed*-test.csv"])
    assert "row 'PPO': expected the seeds [0, 1, 2]" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the summary refuses the undeclared seed's file
        summary_main([files[3]])
    assert "is seed 3, which" in capsys.readouterr().err
    assert summary_main([files[0]]) == 0
