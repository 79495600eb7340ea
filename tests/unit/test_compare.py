"""Dtype-aware comparison of outputs (NumPy only)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from xla_service.catalog.schema import tolerance
from xla_service.passes.compare import (
    compare_output,
    compare_outputs,
    compute_dtype,
    is_inexact,
    widen,
)


def test_equal_outputs_match():
    outputs = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2], np.int32), np.array(True)]
    assert compare_outputs(outputs, [o.copy() for o in outputs]) == []


def test_float_within_and_beyond_tolerance():
    rtol, atol = tolerance("float32")
    expected = np.full(4, 100.0, np.float32)
    near = expected + np.float32(0.5 * (atol + rtol * 100))
    assert compare_outputs([expected], [near]) == []
    far = expected.copy()
    far[2] += 1
    (message,) = compare_outputs([expected], [far])
    assert message.startswith("output 0 (float32[4]) differs in 1 of 4 elements")
    assert "largest difference 1 at index (2,)" in message and "expected 100, got 101" in message


def test_integers_and_booleans_must_be_equal():
    (message,) = compare_outputs([np.array([1, 2, 3], np.int32)], [np.array([1, 2, 4], np.int32)])
    assert "largest difference 1 at index (2,)" in message and "integers must be equal" in message
    assert compare_outputs([np.array([True])], [np.array([False])]) != []


def test_nan_and_inf():
    nan = np.array([np.nan, 1.0], np.float32)
    assert compare_outputs([nan], [nan.copy()]) == []
    assert compare_outputs([np.array([0.0, 1.0], np.float32)], [nan]) != []
    inf = np.array([np.inf], np.float32)
    assert compare_outputs([inf], [inf.copy()]) == []
    assert compare_outputs([inf], [-inf]) != []


def test_bfloat16_has_a_looser_tolerance():
    expected = np.array([1.0, 2.0], ml_dtypes.bfloat16)
    assert is_inexact(expected.dtype) and not is_inexact(np.dtype(np.int8))
    assert compare_outputs([expected], [(expected.astype(np.float32) * 1.0078125).astype(ml_dtypes.bfloat16)]) == []
    assert compare_outputs([expected], [expected * 2]) != []


@pytest.mark.parametrize(
    "actual, message",
    [
        ([np.zeros(3, np.float32)], "expected float32[2], got float32[3]"),
        ([np.zeros(2, np.float64)], "expected float32[2], got float64[2]"),
        ([], "expected 1 outputs, got 0"),
    ],
)
def test_structure_mismatches(actual, message):
    (found,) = compare_outputs([np.zeros(2, np.float32)], actual)
    assert message in found


@pytest.mark.parametrize(
    "text, expected",
    [
        ("ENTRY e { p = f32[4] parameter(0) ROOT n = f32[4] negate(p) }", ""),
        ("ENTRY e { p = f32[4] parameter(0) c = bf16[4] convert(p) ROOT r = f32[4] convert(c) }", "bfloat16"),
        ("ENTRY e { p = f16[4] parameter(0) ROOT r = f32[4] convert(p) }", "float16"),
        ("ENTRY e { p = f16[4] parameter(0) q = bf16[4] parameter(1) ROOT t = (f16[4], bf16[4]) tuple(p, q) }", "bfloat16"),
        ("ENTRY e { p = f8e4m3fn[4] parameter(0) ROOT r = f32[4] convert(p) }", "float8"),
        ("ENTRY e { bf16_like = f32[4] parameter(0) ROOT r = f32[4] negate(bf16_like) }", ""),
    ],
)
def test_compute_dtype_is_the_narrowest_float_in_the_module(text, expected):
    assert compute_dtype(text) == expected


def test_float32_outputs_of_a_bf16_module_are_compared_at_bf16_tolerance():
    expected = np.array([0.691832], np.float32)
    actual = np.array([0.695738], np.float32)  # a bf16 rounding step away (measured on BERT bf16)
    assert compare_outputs([expected], [actual]) != []
    assert compare_outputs([expected], [actual], compute="bfloat16") == []
    far = np.array([0.8], np.float32)
    assert compare_outputs([expected], [far], compute="bfloat16") != []
    # integers stay exact whatever the compute type
    assert compare_outputs([np.array([1], np.int32)], [np.array([2], np.int32)], compute="bfloat16") != []


def test_widen_makes_every_narrow_float_f32():
    text = "ENTRY e { p = bf16[2]{0} parameter(0) h = f16[2] convert(p) q = f8e4m3fn[] constant(1) ROOT r = f32[2] convert(h) }"
    assert widen(text) == "ENTRY e { p = f32[2]{0} parameter(0) h = f32[2] convert(p) q = f32[] constant(1) ROOT r = f32[2] convert(h) }"
    assert widen("ENTRY e { bf16_like = f32[4] parameter(0) }") == "ENTRY e { bf16_like = f32[4] parameter(0) }"


def test_normwise_tolerance_scales_with_the_outputs_largest_magnitude():
    """Elementwise, 0.063 moved by 3.5e-5 is beyond float32 tolerance; normwise,
    in an output reaching 0.9, it is within it; a real change is not."""
    expected = np.array([0.0625485, 0.9, -0.5], dtype=np.float32)
    rounded = np.array([0.0625834, 0.9, -0.5], dtype=np.float32)
    assert compare_output(0, expected, rounded) is not None
    assert compare_output(0, expected, rounded, normwise=True) is None
    wrong = np.array([0.0725485, 0.9, -0.5], dtype=np.float32)
    error = compare_output(0, expected, wrong, normwise=True)
    assert error is not None and "of the largest magnitude 0.9" in error
    nan = np.array([np.nan, np.inf, 1.0], dtype=np.float32)
    assert compare_output(0, nan, nan.copy(), normwise=True) is None
