"""The op count rule: a module is counted as XLA's flatten-call-graph and call-inliner leave it.

Property tests over every bundled family with random pass prefixes (through
the engine's workers, real XLA), the shared-callee twin, and the Python
inliner against XLA's own passes.
"""
from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from xla_service.catalog.passes import PASS_NAMES
from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import Engine

REPO = Path(__file__).resolve().parents[2]
FLATTEN_AND_INLINE = ("flatten-call-graph", "call-inliner")


def _smallest(suite: Path, count: int) -> list[Path]:
    """The ``count`` smallest benchmarks of a suite (by text size)."""
    manifest = json.loads((suite / "manifest.json").read_text())
    entries = sorted(manifest["benchmarks"], key=lambda e: e["text_bytes"])
    return [suite / e["file"] for e in entries[:count]]


SUITES = sorted(p for p in (REPO / "datasets").glob("xla-*-v0") if (p / "manifest.json").is_file())
MODULES = [path for suite in SUITES for path in _smallest(suite, 2)]


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    engine = Engine(workers=2)
    try:
        yield engine
    finally:
        engine.close()


def _walk(engine: Engine, state: Analysis, rng: random.Random, steps: int) -> Analysis:
    for _ in range(steps):
        try:
            state = engine.apply(state, rng.choice(PASS_NAMES))
        except ValueError:  # XLA fails on some passes: the state stays
            pass
    return state


def _flattened(engine: Engine, state: Analysis) -> Analysis:
    for name in FLATTEN_AND_INLINE:
        state = engine.apply(state, name)
    return state


def test_every_family_is_covered() -> None:
    assert {p.parent.name for p in MODULES} == {s.name for s in SUITES} and len(SUITES) >= 6


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name.split(".")[0])
def test_flattening_and_inlining_never_change_the_count(engine: Engine, path: Path) -> None:
    """Appending flatten-call-graph call-inliner to any prefix leaves OpCount (and
    every opcode count) unchanged, whether or not the module has calls."""
    rng = random.Random(path.name)
    state = engine.load(gzip.open(path, "rt").read())
    for prefix in (0, 4, 8):  # random passes before the check
        state = _walk(engine, state, rng, 0 if prefix == 0 else 4)
        flattened = _flattened(engine, state)
        assert flattened.op_count == state.op_count, (path.name, prefix)
        assert flattened.opcode_counts == state.opcode_counts
        assert "call" not in flattened.histogram()


SHARED = """HloModule shared

add_one {
  p = f32[8] parameter(0)
  one = f32[] constant(1)
  ones = f32[8] broadcast(one), dimensions={}
  s = f32[8] add(p, ones)
  ROOT t = f32[8] tanh(s)
}

ENTRY main {
  x = f32[8] parameter(0)
  a = f32[8] call(x), to_apply=add_one
  b = f32[8] call(a), to_apply=add_one
  c = f32[8] call(b), to_apply=add_one
  ROOT r = f32[8] multiply(c, a)
}
"""

TWIN = """HloModule twin

ENTRY main {
  x = f32[8] parameter(0)
  one = f32[] constant(1)
  ones = f32[8] broadcast(one), dimensions={}
  sum1 = f32[8] add(x, ones)
  a = f32[8] tanh(sum1)
  one2 = f32[] constant(1)
  ones2 = f32[8] broadcast(one2), dimensions={}
  sum2 = f32[8] add(a, ones2)
  b = f32[8] tanh(sum2)
  one3 = f32[] constant(1)
  ones3 = f32[8] broadcast(one3), dimensions={}
  sum3 = f32[8] add(b, ones3)
  c = f32[8] tanh(sum3)
  ROOT r = f32[8] multiply(c, a)
}
"""


def test_a_shared_callee_counts_at_every_call_site(engine: Engine) -> None:
    shared, twin = engine.load(SHARED), engine.load(TWIN)
    assert shared.op_count == twin.op_count > 0
    assert shared.opcode_counts == twin.opcode_counts
    assert shared.histogram()["tanh"] == 3
    # the states themselves differ: the shared module holds one callee and three calls
    assert shared.text.count(" call(") == 3 and " call(" not in twin.text
    assert shared.text.count(" tanh(") == 1


def test_the_default_pipeline_is_counted_by_the_same_rule(engine: Engine) -> None:
    state = engine.load(SHARED)
    default = engine.default_pipeline(state)
    assert default.op_count <= state.op_count
    assert _flattened(engine, default).op_count == default.op_count
