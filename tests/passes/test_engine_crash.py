"""The Engine survives XLA: dead workers, step timeouts, XLA's own errors; and it caches."""
from __future__ import annotations

import logging
import os
import signal
import threading
import time

import pytest
from integration.conftest import worker_pids

from xla_service.errors import HloParseError, PassCrashedError, PassTimeoutError
from xla_service.passes.engine import Engine
from xla_service.passes.workers import WorkerDied

from . import _helpers

CSE = """HloModule cse
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  a = f32[4] add(p0, p1)
  b = f32[4] add(p0, p1)
  ROOT m = f32[4] multiply(a, b)
}
"""


def _variant(tag: str) -> str:
    """The CSE module under another name: a state the cache has never seen."""
    return CSE.replace("HloModule cse", f"HloModule cse_{tag}")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    e = Engine(workers=1, log_dir=tmp_path_factory.mktemp("worker-logs"))
    yield e
    e.close()


def _worker_pid(engine: Engine) -> int:
    (pid,) = engine.worker_pids()
    return pid


def _misses(engine: Engine) -> int:
    return sum(engine.cache.stats()["misses"].values())


def _hits(engine: Engine) -> int:
    return sum(engine.cache.stats()["hits"].values())


def _one_add(state):
    return state.histogram().get("add") == 1


def test_crash_request_replaces_the_worker(engine):
    state = engine.load(_variant("crash"))
    before = engine.apply(state, "cse")
    assert _one_add(before)
    replaced, pid = engine.workers_replaced, _worker_pid(engine)

    with pytest.raises(WorkerDied, match="XLA aborted") as died:
        engine.request("crash")
    assert died.value.xla_aborted

    assert engine.workers_replaced == replaced + 1
    assert _worker_pid(engine) != pid
    engine.cache.clear()  # make the next step reach the new worker
    misses = _misses(engine)
    after = engine.apply(state, "cse")
    assert _misses(engine) == misses + 1
    assert after.text == before.text


def test_worker_killed_mid_step(engine):
    """The worker dies while it holds a request: PassCrashedError, then business as usual.

    The worker is stopped (SIGSTOP) before the step, so it certainly dies with
    the request pending, whatever the machine's speed; it is killed from
    another thread while the step waits for it.
    """
    state = engine.load(_variant("kill"))
    before = engine.apply(state, "cse")
    engine.cache.clear()
    engine.load(_variant("kill-settled"))  # its previous compile's tail is done: idle for real
    replaced, pid = engine.workers_replaced, _worker_pid(engine)
    os.kill(pid, signal.SIGSTOP)
    killer = threading.Timer(0.2, os.kill, (pid, signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(PassCrashedError) as info:
            engine.apply(state, "cse")
    finally:
        killer.join()
    message = str(info.value)
    assert "'cse'" in message and "replaced" in message and "keeps its state" in message
    assert "killed by SIGKILL" in message and info.value.transient  # not XLA's doing: not cached
    assert engine.workers_replaced == replaced + 1
    assert _worker_pid(engine) != pid

    after = engine.apply(state, "cse")
    assert after is not state
    assert after.text == before.text


def test_a_spare_killed_while_waiting_is_not_used(engine):
    """After a preemption the pool keeps a started spare; if something kills it
    meanwhile, the next preemption starts a fresh worker instead of handing out
    the dead one."""
    engine.request("settle_for", 60.0)
    before = set(worker_pids(os.getpid()))
    preempted = engine.stats()["workers_preempted"]
    engine.load(_variant("preempt-1"))  # the only worker is settling: preempted
    assert engine.stats()["workers_preempted"] == preempted + 1

    def spares() -> set[int]:  # started since, and not serving
        return set(worker_pids(os.getpid())) - before - set(engine.worker_pids())

    deadline = time.monotonic() + 60
    while not spares() and time.monotonic() < deadline:
        time.sleep(0.1)
    (spare,) = spares()
    os.kill(spare, signal.SIGKILL)
    time.sleep(0.3)
    engine.request("settle_for", 60.0)
    state = engine.load(_variant("preempt-2"))  # preempted again: not by the dead spare
    assert engine.stats()["workers_preempted"] == preempted + 2
    assert _one_add(engine.apply(state, "cse"))
    assert spare not in engine.worker_pids()


def test_replacement_outlives_the_thread_that_spawned_it(tmp_path):
    engine = Engine(workers=1, log_dir=tmp_path)
    try:
        def crash_then_use():
            with pytest.raises(WorkerDied):
                engine.request("crash")
            engine.load(CSE)  # the replacement has started (and armed its death signal)

        thread = threading.Thread(target=crash_then_use)
        thread.start()
        thread.join()
        (pid,) = engine.worker_pids()
        time.sleep(0.5)
        os.kill(pid, 0)  # still alive (raises ProcessLookupError otherwise)
    finally:
        engine.close()


def test_step_timeout(engine):
    state = engine.load(_variant("timeout"))
    replaced = engine.workers_replaced
    engine.step_timeout = 0.001
    try:
        with pytest.raises(PassTimeoutError, match="replaced"):
            engine.apply(state, "cse")
    finally:
        engine.step_timeout = 300
    assert engine.workers_replaced == replaced + 1
    result = engine.apply(state, "cse")  # not cached: the timed-out step stored nothing
    assert _one_add(result)


@pytest.mark.parametrize("pass_name, changes", [("cse", True), ("dce", False)])
def test_cache_counts_one_miss_then_one_hit(engine, pass_name, changes):
    state = engine.load(_variant(f"cache_{pass_name}"))
    hits, misses = _hits(engine), _misses(engine)
    first = engine.apply(state, pass_name)
    assert (_hits(engine), _misses(engine)) == (hits, misses + 1)
    second = engine.apply(state, pass_name)
    assert (_hits(engine), _misses(engine)) == (hits + 1, misses + 1)
    assert second is first
    assert (first is not state) == changes


def test_xla_abort_after_the_pass_is_recovered_from_dumps(tmp_path, monkeypatch, caplog):
    """A real abort: with XLA's full CPU backend (``XLA_GYM_FULL_BACKEND=1``; steps
    skip fusion by default) the backend CHECK-fails on a non-simplified gather
    after cse ran, and the result is read from the dumps."""
    monkeypatch.setenv("XLA_GYM_FULL_BACKEND", "1")
    engine = Engine(workers=1, log_dir=tmp_path)
    try:
        _abort_recovered(engine, caplog)
    finally:
        engine.close()


def test_gather_module_does_not_abort_the_default_backend(engine):
    """Steps skip fusion, whose indexing analysis aborted on non-simplified gathers."""
    state = engine.load(_helpers.take_module())
    replaced = engine.workers_replaced
    result = engine.apply(state, "cse")
    assert engine.workers_replaced == replaced
    assert result.text.count(" call(") == state.text.count(" call(") - 1


def _abort_recovered(engine, caplog):
    state = engine.load(_helpers.take_module())
    replaced = engine.workers_replaced
    with caplog.at_level(logging.WARNING, logger="xla_service.passes.engine"):
        result = engine.apply(state, "cse")
    assert engine.workers_replaced == replaced + 1
    assert any("IsSimplifiedGather" in r.getMessage() for r in caplog.records)
    assert result.text.count(" call(") == state.text.count(" call(") - 1
    # gather_simplifier makes the gather one the backend takes: no abort.
    replaced = engine.workers_replaced
    simplified = engine.apply(state, "gather_simplifier")
    assert simplified is not state
    assert engine.workers_replaced == replaced


def test_pass_rejected_by_xla_is_a_clean_error(engine):
    """gather_simplifier on GPT-2's batched gathers: an XLA RET_CHECK, not an abort."""
    state = engine.load(_helpers.gpt2_text())
    replaced = engine.workers_replaced
    with pytest.raises(PassCrashedError, match="gather_simplifier.*RET_CHECK"):
        engine.apply(state, "gather_simplifier")
    assert engine.workers_replaced == replaced
    # Once batched_gather_scatter_normalizer ran, the same pass is fine.
    normalized = engine.apply(state, "batched_gather_scatter_normalizer")
    assert normalized is not state
    assert engine.apply(normalized, "gather_simplifier") is not normalized


def test_parse_error_crosses_the_process_boundary(engine):
    with pytest.raises(HloParseError, match="line 3"):
        engine.load("HloModule m\nENTRY e {\n  ROOT p = f32[4] parameterr(0)\n}\n")


def test_engine_keeps_its_single_worker(engine):
    assert len(engine.worker_pids()) == 1
    assert _one_add(engine.apply(engine.load(_variant("last")), "cse"))
