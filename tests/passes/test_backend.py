"""``BackendCost``: what XLA's CPU backend makes of a module, and the roofline over it.

Checked against XLA itself: the optimized module, its cost analysis and its
buffers are the same at LLVM -O0 (what ``backend.py`` compiles with) as at
XLA's default -O2; the roofline's flops and transcendentals equal XLA's own
cost analysis on a module without loops, and exceed it by the trip count in a
loop (XLA's cost analysis counts a ``while`` body once).
"""
from __future__ import annotations

import gzip
import json

import pytest

from tests.passes._helpers import REPO, gpt2_text
from xla_service.catalog.backend import BACKEND_KEYS, ROOFLINE
from xla_service.passes.engine import Engine
from xla_service.passes.roofline import module_costs, parse_module

RNN = REPO / "datasets/xla-rnn-v0/gru-bicls-l1-h32-s32-b4-adam-train.hlo.gz"
MOE = REPO / "datasets/xla-moe-v0/moe-l2-d64-h2-s32-b2-e4-k2-infer.hlo.gz"
KEY = {k: i for i, k in enumerate(BACKEND_KEYS)}


def _text(path) -> str:
    with gzip.open(path, "rt") as f:
        return f.read()


@pytest.mark.slow
@pytest.mark.parametrize("path", [RNN, MOE], ids=["rnn", "moe"])
@pytest.mark.parametrize("pipeline", ["full", "agent"])
def test_llvm_level_does_not_change_what_is_read(path, pipeline):
    """-O0 (``backend.py``) and XLA's default -O2 give the same optimized HLO, cost and buffers."""
    from xla_service.passes import observe
    from xla_service.passes.backend import optimized_text

    text = _text(path)
    fast = observe.compiled(text, observe.mode_of(pipeline, analysis=True))[1]
    slow = observe.compiled(text, observe.mode_of(pipeline))[1]
    assert observe.mode_of(pipeline, analysis=True) != observe.mode_of(pipeline)
    assert optimized_text(fast) == optimized_text(slow)
    assert fast.cost_analysis() == slow.cost_analysis()
    assert fast.get_compiled_memory_stats().temp_size_in_bytes == slow.get_compiled_memory_stats().temp_size_in_bytes


@pytest.mark.slow
@pytest.mark.parametrize("path", [RNN, MOE], ids=["rnn", "moe"])
@pytest.mark.parametrize("pipeline", ["full", "agent"])
def test_read_from_the_dumps_as_the_finished_executable_reports_it(path, pipeline):
    """``backend_cost`` replies before LLVM is done; the executable's own numbers agree."""
    from xla_service.passes import compile as compiling
    from xla_service.passes.backend import backend_cost, executable_cost

    text = _text(path)
    early = backend_cost(text, pipeline)
    assert compiling.background_pending() or not compiling.BACKGROUND  # the tail may have ended already
    compiling.settle()
    assert early == executable_cost(text, pipeline)


def test_roofline_counts_what_xla_counts_on_a_module_without_loops():
    from xla_service.passes import observe
    from xla_service.passes.backend import optimized_text

    executable = observe.compiled(gpt2_text(), observe.VALIDATION)[1]
    text = optimized_text(executable)
    assert " while(" not in text
    costs, xla = module_costs(text, ROOFLINE), executable.cost_analysis()
    assert costs.flops == pytest.approx(xla["flops"], rel=0.01)
    assert costs.transcendentals == pytest.approx(xla["transcendentals"], rel=1e-6)
    assert costs.bytes == pytest.approx(xla["bytes accessed"], rel=0.1)
    assert costs.fusions == text.count(" fusion(") - _fusions_inside_fusions(text)
    assert 0 < costs.fusions <= costs.kernels


def _fusions_inside_fusions(text: str) -> int:
    entry, computations = parse_module(text)
    fused = {c for instructions in computations.values() for i in instructions for c in i.called.get("calls", [])}
    return sum(i.opcode == "fusion" for name in fused for i in computations.get(name, []))


def test_roofline_runs_a_loop_body_as_often_as_xla_knows_it_runs():
    from xla_service.passes import observe
    from xla_service.passes.backend import optimized_text

    executable = observe.compiled(_text(RNN), observe.VALIDATION)[1]
    text = optimized_text(executable)
    trips = {json.loads(line.split("backend_config=")[1])["known_trip_count"]["n"]
             for line in text.splitlines() if " while(" in line}
    assert trips == {"32"}
    costs = module_costs(text, ROOFLINE)
    once = module_costs(text.replace('"known_trip_count":{"n":"32"}', '"known_trip_count":{"n":"1"}'), ROOFLINE)
    assert costs.flops > 10 * executable.cost_analysis()["flops"]  # XLA counts the body once
    assert costs.seconds > 5 * once.seconds and costs.kernels == once.kernels


def test_an_in_place_update_costs_the_update_not_the_buffer():
    text = """HloModule m, is_scheduled=true
%fused (p0: f32[1000,100], p1: f32[1,100], p2: s32[]) -> f32[1000,100] {
  %p0 = f32[1000,100]{1,0} parameter(0)
  %p1 = f32[1,100]{1,0} parameter(1)
  %p2 = s32[] parameter(2)
  %z = s32[] constant(0)
  ROOT %d = f32[1000,100]{1,0} dynamic-update-slice(%p0, %p1, %p2, %z)
}

ENTRY %main (a: f32[1000,100], b: f32[1,100], i: s32[]) -> f32[1000,100] {
  %a = f32[1000,100]{1,0} parameter(0)
  %b = f32[1,100]{1,0} parameter(1)
  %i = s32[] parameter(2)
  ROOT %f = f32[1000,100]{1,0} fusion(%a, %b, %i), kind=kLoop, calls=%fused
}
"""
    costs = module_costs(text, ROOFLINE)
    assert costs.kernels == 1 and costs.fusions == 1
    assert costs.bytes == 400 + 400 + 4  # the update read and written, the index read


def test_backend_cost_through_the_engine_is_cached_and_follows_the_pipeline(tmp_path):
    engine = Engine(workers=1, log_dir=tmp_path)
    try:
        state = engine.load(gpt2_text())
        full = engine.backend_cost(state, "full")
        agent = engine.backend_cost(state, "agent")
        assert len(full) == len(BACKEND_KEYS) and all(v >= 0 for v in full)
        assert full[KEY["flops"]] > 0 and full[KEY["estimated_seconds"]] > 0
        # Without XLA's own optimizations, the unoptimized module keeps more buffers and traffic.
        assert agent[KEY["bytes_accessed"]] > full[KEY["bytes_accessed"]]
        misses = engine.stats()["misses"]
        assert engine.backend_cost(state, "full") == full and engine.stats()["misses"] == misses
        with pytest.raises(ValueError, match="Expected a runtime pipeline"):
            engine.backend_cost(state, "fast")
    finally:
        engine.close()
