"""The engine's speed-ups keep its contract: caches, early replies, cleanup.

Results staying byte-identical is ``benchmarks/check_identical.py`` (run by
``test_benchmarks_smoke.py``); these check the mechanisms around them.
"""
from __future__ import annotations

import gzip
import os
import signal
import time
from pathlib import Path

import pytest

from xla_service.errors import PassCrashedError
from xla_service.passes.engine import Engine

GPT2 = Path(__file__).resolve().parents[2] / "benchmarks" / "hlo" / "gpt2-l2-d64-h4-s32-b2-adam-f32-train.hlo.gz"
CSE = """HloModule cse_speed
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  a = f32[4] add(p0, p1)
  b = f32[4] add(p0, p1)
  ROOT m = f32[4] multiply(a, b)
}
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    e = Engine(workers=2, log_dir=tmp_path_factory.mktemp("worker-logs"))
    yield e
    e.close()


def test_a_benchmark_is_normalized_once(engine):
    misses = engine.misses
    first = engine.load(CSE)
    assert engine.misses == misses + 1
    again = engine.load(CSE)
    assert again is first and engine.misses == misses + 1
    assert first.mlir, "a loaded state carries the compile input of its next step"


def test_xla_failures_are_cached_like_results(engine):
    """gather_simplifier on GPT-2's batched gathers: XLA's RET_CHECK, every time."""
    state = engine.load(gzip.decompress(GPT2.read_bytes()).decode())
    with pytest.raises(PassCrashedError, match="RET_CHECK") as first:
        engine.apply(state, "gather_simplifier")
    hits = engine.hits
    started = time.perf_counter()
    with pytest.raises(PassCrashedError) as again:
        engine.apply(state, "gather_simplifier")
    assert time.perf_counter() - started < 0.05
    assert engine.hits == hits + 1
    assert str(again.value) == str(first.value)


def test_workers_dead_after_their_reply_cost_no_step(engine):
    """A worker that XLA (here: SIGKILL) kills after it replied loses no request."""
    state = engine.load(CSE)
    expected = engine.apply(state, "cse")
    replaced = engine.workers_replaced
    for worker in list(engine._pool._all):
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait(timeout=10)  # dead before the next request, as after an abort
    engine._cache.clear()
    assert engine.apply(state, "cse").text == expected.text
    assert engine.workers_replaced >= replaced + 1


def test_step_dump_directories_are_removed(engine):
    state = engine.load(CSE)
    engine._cache.clear()
    engine.apply(state, "cse")
    deadline = time.time() + 10
    while os.listdir(engine._scratch) and time.time() < deadline:
        time.sleep(0.05)  # a worker may still be finishing its compile
    assert os.listdir(engine._scratch) == []


def test_closing_removes_the_scratch_directory(tmp_path):
    engine = Engine(workers=1, log_dir=tmp_path)
    scratch = engine._scratch
    engine.apply(engine.load(CSE), "cse")
    engine.close()
    assert not os.path.exists(scratch)
