"""Validation's second look at a float32 module: both modules widened to float64.

Where an output is a small difference of large terms, float32 rounding alone
moves it beyond float32 tolerance (a generated training step's gradient: 6.2
times the tolerance between its own float32 and float64 runs). Widened to
float64, the same arithmetic reassociated agrees; a real change does not.
"""
from __future__ import annotations

import pytest

from xla_service.passes.compare import widen_to_float64
from xla_service.passes.engine import Engine


def _module(root: str, extra: str = "") -> str:
    """``r = (p0 + 1e4 * p1) - 1e4 * p1`` in float32, or what ``root`` makes of it."""
    return f"""HloModule m, entry_computation_layout={{(f32[64]{{0}}, f32[64]{{0}})->f32[64]{{0}}}}
ENTRY main {{
  p0 = f32[64]{{0}} parameter(0)
  p1 = f32[64]{{0}} parameter(1)
  c = f32[] constant(10000)
  cb = f32[64]{{0}} broadcast(c), dimensions={{}}
  big = f32[64]{{0}} multiply(p1, cb)
  {extra}
  ROOT r = f32[64]{{0}} {root}
}}
"""


ROUNDED = _module("subtract(s, big)", "s = f32[64]{0} add(p0, big)")
REASSOCIATED = _module("add(p0, z)", "z = f32[64]{0} subtract(big, big)")
CHANGED = _module("add(p0, z)", "z = f32[64]{0} add(big, big)")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    e = Engine(workers=1, log_dir=tmp_path_factory.mktemp("worker-logs"))
    yield e
    e.close()


def test_float32_rounding_alone_passes_in_float64(engine):
    """``(p0 + big) - big`` keeps p0 to about 1e-3 in float32 (beyond rtol 1e-4): in float64, to 1e-12."""
    verdict = engine.validate(engine.load(ROUNDED), engine.load(REASSOCIATED), 0)
    assert verdict["status"] == "ok", verdict["errors"]
    assert verdict["timing"]["second_look_s"] > 0  # float32 alone differed
    same = engine.validate(engine.load(ROUNDED), engine.load(ROUNDED), 0)
    assert same["status"] == "ok" and same["timing"]["second_look_s"] == 0


def test_a_real_change_is_still_caught_in_float64(engine):
    verdict = engine.validate(engine.load(REASSOCIATED), engine.load(CHANGED), 0)
    assert verdict["status"] == "mismatch"
    assert "widened to float64, output 0 (float32[64])" in verdict["errors"][0]


TOPK_AND_BITS = """HloModule m, entry_computation_layout={(f32[4,8]{1,0}, u32[4,8]{1,0})->(f32[4,2]{1,0}, u32[4,8]{1,0})}
ENTRY main {
  x = f32[4,8]{1,0} parameter(0)
  k = u32[4,8]{1,0} parameter(1)
  sh = u32[4,8]{1,0} shift-right-logical(k, u32[4,8]{1,0} broadcast(u32[] constant(9)))
  one = u32[4,8]{1,0} broadcast(u32[] constant(1065353216)), dimensions={}
  bits = u32[4,8]{1,0} or(sh, one)
  u = f32[4,8]{1,0} bitcast-convert(bits)
  y = f32[4,8]{1,0} multiply(x, u)
  t = (f32[4,2]{1,0}, s32[4,2]{1,0}) topk(y), k=2, largest=true
  v = f32[4,2]{1,0} get-tuple-element(t), index=0
  back = u32[4,8]{1,0} bitcast-convert(y)
  ROOT out = (f32[4,2]{1,0}, u32[4,8]{1,0}) tuple(v, back)
}
"""


def test_widening_keeps_bit_widths_and_the_cpu_topk_in_float32():
    wide = widen_to_float64(TOPK_AND_BITS)
    assert "u = f64[4,8]{1,0} convert(u.bits_out)" in wide
    assert "u.bits_out = f32[4,8]{1,0} bitcast-convert(bits)" in wide
    assert "back.bits = f32[4,8]{1,0} convert(y)" in wide
    assert "t.in = f32[4,8]{1,0} convert(y)" in wide
    assert "t = (f64[4,2]{1,0}, s32[4,2]{1,0}) tuple(t.wide, t.indices)" in wide
    assert "f32[" not in widen_to_float64(ROUNDED) and "c128[2]" in widen_to_float64("c = c64[2] parameter(0)")


def test_a_module_with_bits_and_topk_is_compared_in_float64(engine):
    """The widened modules compile and run (XLA's CPU TopK takes float32 only); a
    changed bit pattern is still caught."""
    start = engine.load(TOPK_AND_BITS)
    assert engine.validate(start, engine.apply(start, "algsimp"), 0)["status"] == "ok"
    changed = engine.load(TOPK_AND_BITS.replace("constant(1065353216)", "constant(1073741824)"))  # 1.0 made 2.0
    verdict = engine.validate(start, changed, 0)
    assert verdict["status"] == "mismatch" and "widened to float64" in verdict["errors"][0], verdict
