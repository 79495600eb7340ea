"""Validation inputs (xla_service/passes/inputs.py): rules read from HLO text, seeded draws.

NumPy only: no XLA here. The modules are small hand-written HLO in the
normalized form of the bundled datasets.
"""
from __future__ import annotations

import gzip
import math
import re
from pathlib import Path

import numpy as np
import pytest

from xla_service.catalog.schema import INPUT_INT_HIGH, TOLERANCES
from xla_service.passes.inputs import DRAWS, REGIMES, Rule, draw, draws, rules

ROOT = Path(__file__).resolve().parents[2]
F32, S32, PRED = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.bool_)

#: An embedding lookup (JAX's wrapping of negative ids included), a dense layer
#: with a tanh, a sequence mask from lengths, a flag, and a running sum.
MODEL = """HloModule model, entry_computation_layout={(f32[10,8]{1,0}, s32[2,5]{1,0}, f32[8,16]{1,0}, s32[2]{0}, pred[], /*index=5*/f32[16]{0}, f32[16]{0})->(f32[2,5,16]{2,1,0}, f32[16]{0})}

region_0.0 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY main.1 {
  table.1 = f32[10,8]{1,0} parameter(0)
  ids.1 = s32[2,5]{1,0} parameter(1)
  zero.1 = s32[] constant(0)
  zeros.1 = s32[2,5]{1,0} broadcast(zero.1), dimensions={}
  negative.1 = pred[2,5]{1,0} compare(ids.1, zeros.1), direction=LT
  ten.1 = s32[] constant(10)
  tens.1 = s32[2,5]{1,0} broadcast(ten.1), dimensions={}
  wrapped.1 = s32[2,5]{1,0} add(ids.1, tens.1)
  fixed.1 = s32[2,5]{1,0} select(negative.1, wrapped.1, ids.1)
  index.1 = s32[2,5,1]{2,1,0} reshape(fixed.1)
  rows.1 = f32[2,5,8]{2,1,0} gather(table.1, index.1), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,8}
  w.1 = f32[8,16]{1,0} parameter(2)
  dense.1 = f32[2,5,16]{2,1,0} dot(rows.1, w.1), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  act.1 = f32[2,5,16]{2,1,0} tanh(dense.1)
  lengths.1 = s32[2]{0} parameter(3)
  iota.1 = s32[5]{0} iota(), iota_dimension=0
  positions.1 = s32[2,5]{1,0} broadcast(iota.1), dimensions={1}
  limits.1 = s32[2,5]{1,0} broadcast(lengths.1), dimensions={0}
  valid.1 = pred[2,5]{1,0} compare(positions.1, limits.1), direction=LT
  mask.1 = pred[2,5,16]{2,1,0} broadcast(valid.1), dimensions={0,1}
  flag.1 = pred[] parameter(4)
  flags.1 = pred[2,5,16]{2,1,0} broadcast(flag.1), dimensions={}
  both.1 = pred[2,5,16]{2,1,0} and(mask.1, flags.1)
  fill.1 = f32[] constant(0)
  fills.1 = f32[2,5,16]{2,1,0} broadcast(fill.1), dimensions={}
  out.1 = f32[2,5,16]{2,1,0} select(both.1, act.1, fills.1)
  total.1 = f32[16]{0} parameter(5)
  sums.1 = f32[16]{0} reduce(out.1, fill.1), dimensions={0,1}, to_apply=region_0.0
  running.1 = f32[16]{0} add(total.1, sums.1)
  variance.1 = f32[16]{0} parameter(6)
  root.1 = f32[16]{0} sqrt(variance.1)
  new.1 = f32[16]{0} add(running.1, root.1)
  ROOT tuple.1 = (f32[2,5,16]{2,1,0}, f32[16]{0}) tuple(out.1, new.1)
}
"""
MODEL_SHAPES = [
    (F32, (10, 8)), (S32, (2, 5)), (F32, (8, 16)), (S32, (2,)), (PRED, ()), (F32, (16,)), (F32, (16,)),
]

#: A dynamic-slice start read from a parameter, inside a called computation
#: reached through a while loop's tuple, and a dynamic-update-slice start.
SLICES = """HloModule slices, entry_computation_layout={(f32[16,4]{1,0}, s32[], s32[], f32[3,4]{1,0})->f32[16,4]{1,0}}

body.0 {
  p.0 = (f32[16,4]{1,0}, s32[]) parameter(0)
  data.0 = f32[16,4]{1,0} get-tuple-element(p.0), index=0
  start.0 = s32[] get-tuple-element(p.0), index=1
  zero.0 = s32[] constant(0)
  piece.0 = f32[4,4]{1,0} dynamic-slice(data.0, start.0, zero.0), dynamic_slice_sizes={4,4}
  grown.0 = f32[16,4]{1,0} pad(piece.0, zero.0), padding=0_12x0_0
  ROOT t.0 = (f32[16,4]{1,0}, s32[]) tuple(grown.0, start.0)
}

cond.0 {
  p.1 = (f32[16,4]{1,0}, s32[]) parameter(0)
  ROOT f.1 = pred[] constant(false)
}

ENTRY main.2 {
  data.2 = f32[16,4]{1,0} parameter(0)
  start.2 = s32[] parameter(1)
  init.2 = (f32[16,4]{1,0}, s32[]) tuple(data.2, start.2)
  loop.2 = (f32[16,4]{1,0}, s32[]) while(init.2), condition=cond.0, body=body.0
  result.2 = f32[16,4]{1,0} get-tuple-element(loop.2), index=0
  row.2 = s32[] parameter(2)
  zero.2 = s32[] constant(0)
  update.2 = f32[3,4]{1,0} parameter(3)
  ROOT out.2 = f32[16,4]{1,0} dynamic-update-slice(result.2, update.2, row.2, zero.2)
}
"""
SLICES_SHAPES = [(F32, (16, 4)), (S32, ()), (S32, ()), (F32, (3, 4))]

#: x @ w with both operands parameters, and a convolution kernel.
PRODUCTS = """HloModule products, entry_computation_layout={(f32[4,64]{1,0}, f32[64,32]{1,0}, f32[1,8,8,3]{3,2,1,0}, f32[3,3,3,16]{3,2,1,0})->(f32[4,32]{1,0}, f32[1,8,8,16]{3,2,1,0})}

ENTRY main.3 {
  x.3 = f32[4,64]{1,0} parameter(0)
  w.3 = f32[64,32]{1,0} parameter(1)
  xw.3 = f32[4,32]{1,0} dot(x.3, w.3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  image.3 = f32[1,8,8,3]{3,2,1,0} parameter(2)
  kernel.3 = f32[3,3,3,16]{3,2,1,0} parameter(3)
  conv.3 = f32[1,8,8,16]{3,2,1,0} convolution(image.3, kernel.3), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT t.3 = (f32[4,32]{1,0}, f32[1,8,8,16]{3,2,1,0}) tuple(xw.3, conv.3)
}
"""
PRODUCTS_SHAPES = [(F32, (4, 64)), (F32, (64, 32)), (F32, (1, 8, 8, 3)), (F32, (3, 3, 3, 16))]


def test_same_seed_gives_byte_identical_inputs_and_others_differ():
    first, again = draws(MODEL, MODEL_SHAPES, 7), draws(MODEL, MODEL_SHAPES, 7)
    assert len(first) == DRAWS == 3
    for a, b in zip(first, again):
        assert [x.tobytes() for x in a] == [x.tobytes() for x in b]
        assert [(x.dtype, x.shape) for x in a] == [(d, s) for d, s in MODEL_SHAPES]
    # draw k is seed + k: draws(seed=8) starts where draws(seed=7) left off
    later = draws(MODEL, MODEL_SHAPES, 8)
    assert [x.tobytes() for x in later[0]] == [x.tobytes() for x in first[1]]
    assert first[0][2].tobytes() != first[2][2].tobytes()


def test_embedding_ids_stay_below_the_table_size_with_both_ends_present():
    rule = rules(MODEL, MODEL_SHAPES)[1]
    assert (rule.kind, rule.low, rule.high) == ("integers", 0, 10), rule
    seen = set()
    for k, inputs in enumerate(draws(MODEL, MODEL_SHAPES, 0, 6)):
        ids = inputs[1]
        assert ids.dtype == np.int32 and ids.min() >= 0 and ids.max() < 10
        if REGIMES[k % 3] != "accumulators zero":  # both ends of the range are there
            assert ids.min() == 0 and ids.max() == 9
        seen |= set(ids.ravel().tolist())
    assert len(seen) >= 8


def test_index_bounds_through_a_while_loop_and_dynamic_slices():
    start, row = rules(SLICES, SLICES_SHAPES)[1:3]
    assert (start.kind, start.high) == ("integers", 16 - 4 + 1)  # dynamic-slice of 4 rows of 16
    assert (row.kind, row.high) == ("integers", 16 - 3 + 1)  # dynamic-update-slice of 3 rows
    for inputs in draws(SLICES, SLICES_SHAPES, 3, 8):
        assert 0 <= int(inputs[1]) <= 12 and 0 <= int(inputs[2]) <= 13


def test_a_gather_into_a_larger_table_found_in_a_bundled_module():
    text = gzip.open(ROOT / "datasets/xla-gpt2-v0/gpt2-l1-d64-h4-s32-b2-f32-infer.hlo.gz", "rt").read()
    shapes = [(F32, ())] * 16 + [(S32, (2, 32))]
    assert rules(text, shapes)[16] == Rule("integers", low=0, high=512, why="index below 512")


def test_lengths_compared_with_an_iota_cover_zero_to_the_full_length():
    rule = rules(MODEL, MODEL_SHAPES)[3]
    assert (rule.kind, rule.low, rule.high) == ("integers", 0, 6)  # 0..5 for an iota of 5, LT


def test_an_integer_compared_with_a_constant_sees_both_outcomes():
    text = MODEL.replace("ids.1 = s32[2,5]{1,0} parameter(1)", "ids.1 = s32[2,5]{1,0} parameter(1)\n  other.1 = s32[2,5]{1,0} copy(ids.1)")
    text = text.replace("rows.1 = f32[2,5,8]{2,1,0} gather(table.1, index.1)", "rows.1 = f32[2,5,8]{2,1,0} gather(table.1, zeros3.1)")
    text = text.replace("index.1 = s32[2,5,1]{2,1,0} reshape(fixed.1)", "zeros3.1 = s32[2,5,1]{2,1,0} broadcast(zero.1), dimensions={}")
    rule = rules(text, MODEL_SHAPES)[1]
    assert rule.kind == "values" and rule.values == (-1, 0, 1), rule
    values = np.concatenate([d[1].ravel() for d in draws(text, MODEL_SHAPES, 0)])
    assert set(values.tolist()) == {-1, 0, 1}


def test_booleans_take_both_values():
    flags = [d[4] for d in draws(MODEL, MODEL_SHAPES, 0, 4)]
    assert {bool(f) for f in flags} == {False, True}  # a single flag alternates with the seed
    shapes = [(PRED, (2,))]
    for seed in range(50):  # an array holds both values in every draw
        (value,) = draw([Rule("bool")], shapes, seed)
        assert value.any() and not value.all()


def test_scale_rule_fan_in_of_dots_and_convolutions():
    table, ids, w, lengths, flag, total, variance = rules(MODEL, MODEL_SHAPES)
    assert w.scale == pytest.approx(1 / math.sqrt(8)) and w.kind == "normal"  # contracts 8
    assert table.scale == 1.0  # an embedding table: gathered, not multiplied
    x, w, image, kernel = rules(PRODUCTS, PRODUCTS_SHAPES)
    # both operands of x @ w are parameters: 64 ** -1/4 each, so x @ w has unit scale
    assert x.scale == pytest.approx(64 ** -0.25) and w.scale == pytest.approx(64 ** -0.25)
    assert kernel.scale == pytest.approx(1 / math.sqrt(3 * 3 * 3))  # every dimension but 'o'
    assert image.scale == 1.0
    inputs = draws(PRODUCTS, PRODUCTS_SHAPES, 0, 1)[0]
    assert abs(float(inputs[3].std()) - kernel.scale) < 0.25 * kernel.scale
    assert abs(float(inputs[0].mean())) < 0.1  # mean 0: no saturation


def test_sqrt_operands_are_nonnegative_and_accumulators_zero_in_one_regime():
    rule_total, rule_variance = rules(MODEL, MODEL_SHAPES)[5:7]
    assert rule_variance.kind == "positive"
    assert rule_total.accumulator and rule_variance.accumulator  # they feed no dot
    assert not rules(MODEL, MODEL_SHAPES)[2].accumulator
    for seed, inputs in enumerate(draws(MODEL, MODEL_SHAPES, 0, 6)):
        assert (inputs[6] >= 0).all() and inputs[6].any()  # a second moment is never zeroed
        assert (REGIMES[seed % 3] == "accumulators zero") == (not inputs[5].any())


def test_every_validation_sees_each_regime_and_saturating_draws_are_uniform():
    for seed in (0, 1, 2, 7):
        assert {REGIMES[s % 3] for s in range(seed, seed + DRAWS)} == set(REGIMES)
    sensitive, _, saturating = draws(PRODUCTS, PRODUCTS_SHAPES, 0)
    assert (saturating[0] >= 0).all() and (saturating[0] < 1).all() and saturating[0].mean() > 0.4
    assert sensitive[0].min() < 0


def test_unreadable_text_falls_back_to_the_plain_rules():
    plain = rules("not HLO at all", MODEL_SHAPES)
    assert [r.kind for r in plain] == ["normal", "integers", "normal", "integers", "bool", "normal", "normal"]
    assert all(r.scale == 1.0 for r in plain)
    assert plain[1].high == INPUT_INT_HIGH
    inputs = draw(plain, MODEL_SHAPES, 0)
    assert inputs[1].min() >= 0 and inputs[1].max() < INPUT_INT_HIGH


def test_docs_quote_the_code():
    """docs/validation.md: the tolerances table is schema.TOLERANCES, the draws and regimes are the code's."""
    doc = (ROOT / "docs/validation.md").read_text()
    assert f"`inputs.DRAWS` = {DRAWS}" in doc
    assert all(f"| {regime} |" in doc for regime in REGIMES)
    assert f"`[0, {INPUT_INT_HIGH})`" in doc
    table = doc.split("## Tolerances", 1)[1].split("## ", 1)[0]
    documented = {}
    for row in re.findall(r"^\| ([a-z0-9, ]+) \| ([\d.e-]+) \| ([\d.e-]+) \|$", table, re.M):
        for name in row[0].split(", "):
            documented[name] = (float(row[1]), float(row[2]))
    assert {k: documented.get(k) for k in TOLERANCES} == TOLERANCES
