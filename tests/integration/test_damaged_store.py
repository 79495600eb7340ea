"""An engine on a store whose file is damaged: the right results (recomputed by XLA), one warning, no crash."""
from __future__ import annotations

import logging
import random

from integration.modules import SMALL_HLO

from xla_service.passes.engine import Engine
from xla_service.service import _store
from xla_service.store.sqlite import ExperienceStore

PASSES = ("cse", "algsimp", "dce")


def _episode(engine: Engine) -> list[str]:
    state = engine.load(SMALL_HLO.decode())
    texts = [state.text]
    for name in PASSES:
        state = engine.apply(state, name)
        texts.append(state.text)
    texts.append(engine.default_pipeline(state).text)
    return texts


def _overwrite_pages(path, first: int) -> None:
    """Random bytes over every page from ``first`` on (4: the tables and indexes after ``meta``)."""
    data = bytearray(path.read_bytes())
    noise = random.Random(0)
    for start in range((first - 1) * 4096, len(data), 4096):
        data[start : start + 4096] = noise.randbytes(4096)
    path.write_bytes(bytes(data))


def test_an_engine_on_a_damaged_store_recomputes_and_warns_once(tmp_path, caplog):
    path = tmp_path / "x.sqlite"
    store = ExperienceStore(path)
    engine = Engine(workers=1, log_dir=tmp_path / "logs", backing=store)
    try:
        expected = _episode(engine)
        assert store.stats()["results"]["step"] == len(PASSES) + 1
        store.close()
        _overwrite_pages(path, 4)
        damaged = ExperienceStore(path)  # page 1 and meta are whole: it opens
        engine.cache.backing = damaged
        engine.cache.clear()
        with caplog.at_level(logging.DEBUG, logger="xla_service.store"):
            assert _episode(engine) == expected
            assert _episode(engine) == expected  # from memory now
            assert engine.pass_outcomes(engine.load(SMALL_HLO.decode()))["cse"] == "changed"
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1 and "is damaged" in warnings[0] and "running without it" in warnings[0]
        assert engine.cache.stats()["backing_hits"] == {}  # nothing came from the damaged file
        damaged.close()
    finally:
        engine.close()


def test_the_service_runs_without_a_store_it_cannot_open(tmp_path, monkeypatch, caplog):
    path = tmp_path / "x.sqlite"
    ExperienceStore(path).close()
    _overwrite_pages(path, 1)
    monkeypatch.setenv("XLA_GYM_STORE", str(path))
    with caplog.at_level(logging.WARNING):
        assert _store() is None
    assert [r.getMessage().startswith("Experience store unavailable") for r in caplog.records] == [True]
