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
    misses = engine.cache.stats()["misses"].get("load", 0)
    first = engine.load(CSE)
    assert engine.cache.stats()["misses"]["load"] == misses + 1
    again = engine.load(CSE)
    assert again is first and engine.cache.stats()["misses"]["load"] == misses + 1
    assert first.mlir, "a loaded state carries the compile input of its next step"


def test_xla_failures_are_cached_like_results(engine):
    """gather_simplifier on GPT-2's batched gathers: XLA's RET_CHECK, every time."""
    state = engine.load(gzip.decompress(GPT2.read_bytes()).decode())
    with pytest.raises(PassCrashedError, match="RET_CHECK") as first:
        engine.apply(state, "gather_simplifier")
    hits = engine.cache.stats()["hits"].get("step", 0)
    started = time.perf_counter()
    with pytest.raises(PassCrashedError) as again:
        engine.apply(state, "gather_simplifier")
    assert time.perf_counter() - started < 0.05
    assert engine.cache.stats()["hits"]["step"] == hits + 1
    assert str(again.value) == str(first.value)


def test_workers_dead_after_their_reply_cost_no_step(engine):
    """A worker that XLA (here: SIGKILL) kills after it replied loses no request."""
    state = engine.load(CSE)
    expected = engine.apply(state, "cse")
    replaced = engine.workers_replaced
    for pid in engine.worker_pids():
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)  # dead before the next request, as after an abort
    engine.cache.clear()
    assert engine.apply(state, "cse").text == expected.text
    assert engine.workers_replaced >= replaced + 1


def test_step_dump_directories_are_removed(engine):
    state = engine.load(CSE)
    engine.cache.clear()
    engine.apply(state, "cse")
    deadline = time.time() + 10
    while os.listdir(engine.scratch) and time.time() < deadline:
        time.sleep(0.05)  # a worker may still be finishing its compile
    assert os.listdir(engine.scratch) == []


def test_closing_removes_the_scratch_directory(tmp_path):
    engine = Engine(workers=1, log_dir=tmp_path)
    scratch = engine.scratch
    engine.apply(engine.load(CSE), "cse")
    engine.close()
    assert not os.path.exists(scratch)
