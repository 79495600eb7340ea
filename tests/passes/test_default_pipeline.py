"""XLA's default pipeline on the bundled GPT-2 benchmark, and replays of single passes."""
from __future__ import annotations

import os

import pytest

from xla_service.catalog.opcodes import UNCOUNTED_OPCODES
from xla_service.passes import xla
from xla_service.passes.engine import Engine

from . import _helpers

#: Passes that each lower GPT-2's op count, in this order (measured, jaxlib 0.10.2).
#: Passes that each lower the op count of the bundled GPT-2 (call-inliner no
#: longer does: the op count rule counts a module as inlined already).
SHORT_REPLAY = ("algsimp", "cse", "transpose-folding")

#: The default pipeline's own order, with the nested `simplification` pipeline as one
#: step (design note: "What the mechanism reproduces").
DEFAULT_ORDER = (
    "flatten-call-graph",
    "batched_gather_scatter_normalizer",
    "dot_decomposer",
    "call-inliner",
    "batch-dot-simplification",
    "simplification",
    "transpose-folding",
    "cse",
)


@pytest.fixture(scope="module")
def gpt2():
    return xla.load(_helpers.gpt2_text())


@pytest.fixture(scope="module")
def default(gpt2, tmp_path_factory):
    return xla.default_pipeline(gpt2.text, str(tmp_path_factory.mktemp("default-dumps")))


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    e = Engine(workers=1, log_dir=tmp_path_factory.mktemp("worker-logs"))
    yield e
    e.close()


def _counted(histogram):
    return {k: v for k, v in histogram.items() if k not in UNCOUNTED_OPCODES}


def test_default_pipeline_lowers_op_count(gpt2, default):
    assert default.op_count < gpt2.op_count


def test_default_pipeline_result_is_normalized(default):
    assert xla.normalize(default.text) == default.text
    assert xla.analyze(default.text).opcode_counts == default.opcode_counts


def test_default_pipeline_inlines_calls(gpt2, default):
    assert _helpers.raw_histogram(gpt2.text).get("call", 0) > 0
    assert _helpers.raw_histogram(default.text).get("call", 0) == 0


def test_short_replay_moves_op_count_the_same_way(engine, gpt2, default):
    state = engine.load(gpt2.text)
    assert state.text == gpt2.text
    counts = [state.op_count]
    for name in SHORT_REPLAY:
        state = engine.apply(state, name)
        counts.append(state.op_count)
    steps = dict(zip(SHORT_REPLAY, zip(counts, counts[1:])))
    assert all(after < before for before, after in steps.values()), steps
    inlined = engine.apply(engine.load(gpt2.text), "call-inliner")
    assert inlined.text != gpt2.text and inlined.op_count == gpt2.op_count
    assert default.op_count < gpt2.op_count, "the default pipeline lowers the op count"
    assert counts[-1] < counts[0], "and so does the replay"


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("XLA_GYM_SLOW_TESTS"),
    reason="about 30 s (3 worker aborts); set XLA_GYM_SLOW_TESTS=1 to run",
)
def test_replaying_default_order_reaches_the_default_result(engine, gpt2, default):
    """Single passes in the default pipeline's order give XLA's own result.

    Some steps abort the worker in the backend (a non-simplified gather after
    batched_gather_scatter_normalizer) and are recovered from their dumps.
    """
    state = engine.load(gpt2.text)
    for name in DEFAULT_ORDER:
        state = engine.apply(state, name)
    assert state.op_count == default.op_count
    assert _counted(state.histogram()) == _counted(default.histogram())
