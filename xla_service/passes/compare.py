"""Comparing a module's outputs with the original's, dtype-aware (NumPy only).

Floating point and complex outputs pass within ``schema.TOLERANCES``
(NaN where the original has NaN, infinities equal), at the tolerance of the
narrowest float type the module computes in if that is looser (a bf16
training step's float32 outputs carry bf16 rounding); integers and booleans
must be equal. A mismatch names the output, the largest difference and where.
Such a module whose outputs still differ is given a second, stricter look
(``validation.validate``): both modules are widened to float32 (``widen``) and
must then agree at float32 tolerance, i.e. compute the same arithmetic. A
float32 module gets the same look one step up (``widen_to_float64``): its
own float32 rounding can exceed float32 tolerance where an output is a small
difference of large terms (a training step's gradients).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from xla_service.catalog.schema import NARROW_HLO_FLOATS, tolerance

__all__ = [
    "compare_output",
    "compare_outputs",
    "compute_dtype",
    "describe",
    "is_inexact",
    "widen",
    "widen_to_float64",
]

_F8 = re.compile(r"\bf8e\w*\[")
_SINGLE = re.compile(r"\b(f32|c64)\[")
_CPU_TOPK = 'custom_call_target="TopK"'  # what XLA's default pipeline makes of topk
_INSTRUCTION = re.compile(r"^(\s*)(ROOT )?(%?[\w.\-]+) = (\([^()]*\)|\S+) ([\w\-]+)\((.*)$")
_NARROW = re.compile(r"\b(?:" + "|".join(NARROW_HLO_FLOATS) + r"|f8e\w*)\[")


def is_inexact(dtype: np.dtype) -> bool:
    """Floating point or complex, including ml_dtypes' bfloat16 and float8 types."""
    if np.issubdtype(dtype, np.inexact):
        return True
    try:
        import ml_dtypes  # jax's narrow float types; present wherever jax is

        ml_dtypes.finfo(dtype)
        return True
    except (ImportError, ValueError, TypeError):
        return False


def describe(array: np.ndarray) -> str:
    """``float32[64,64]``."""
    return f"{array.dtype.name}[{','.join(str(d) for d in array.shape)}]"


def compute_dtype(hlo_text: str) -> str:
    """The narrowest floating point type an HLO module computes in ("" if none
    narrower than float32): ``bfloat16``, ``float16``, or ``float8`` for the
    float8 family (``schema.DEFAULT_TOLERANCE``)."""
    if _F8.search(hlo_text):
        return "float8"
    found = [name for hlo, name in NARROW_HLO_FLOATS.items() if re.search(rf"\b{hlo}\[", hlo_text)]
    # bfloat16 is coarser than float16: its tolerance wins
    return "bfloat16" if "bfloat16" in found else (found[0] if found else "")


def widen(hlo_text: str) -> str:
    """The module with every narrow float element type (bf16, f16, f8) made f32."""
    return _NARROW.sub("f32[", hlo_text)


def _double(text: str) -> str:
    return _SINGLE.sub(lambda t: "f64[" if t[1] == "f32" else "c128[", text)


def widen_to_float64(hlo_text: str) -> str:
    """The module with every ``f32`` element type made ``f64`` (``c64``: ``c128``).

    ``bitcast-convert`` reads and writes bits of a given width, so where its
    operand or result was float32 it stays float32: the widened operand is
    converted to float32 first, the float32 result to float64 after. So does
    ``topk`` (and the ``TopK`` custom call XLA makes of it), which XLA's CPU
    backend runs on float32 only.
    """
    lines = hlo_text.split("\n")
    types = {m[3]: m[4] for m in map(_INSTRUCTION.match, lines) if m}
    out = []
    for line in lines:
        m = _INSTRUCTION.match(line)
        if m and m[4].startswith("(f32[") and (m[5] == "topk" or _CPU_TOPK in m[6]):
            out.extend(_float32_topk(m, types) or [_double(line)])
            continue
        if not m or m[5] != "bitcast-convert":
            out.append(_double(line))
            continue
        indent, root, name, result, _, rest = m.groups()
        operand, tail = rest.split(")", 1)
        source = operand.split()[-1]
        if _SINGLE.match(types.get(source, "")):
            out.append(f"{indent}{name}.bits = {types[source]} convert({source})")
            source = f"{name}.bits"
        if _SINGLE.match(result):
            out.append(f"{indent}{name}.bits_out = {result} bitcast-convert({source}){tail}")
            out.append(f"{indent}{root or ''}{name} = {_double(result)} convert({name}.bits_out)")
        else:
            out.append(f"{indent}{root or ''}{name} = {result} bitcast-convert({source}){tail}")
    return "\n".join(out)


def _float32_topk(m: re.Match[str], types: dict[str, str]) -> list[str]:
    """A float32 ``topk`` kept in a float64 module: its operand narrowed, its values
    widened (none if the operand's type is not known: the line is widened as it is)."""
    indent, root, name, result, opcode, rest = m.groups()
    operand, tail = rest.split(")", 1)
    source = operand.split()[-1]
    values, indices = result[1:-1].split(", ", 1)
    if source not in types:
        return []
    return [
        f"{indent}{name}.in = {types[source]} convert({source})",
        f"{indent}{name}.out = {result} {opcode}({name}.in){tail}",
        f"{indent}{name}.values = {values} get-tuple-element({name}.out), index=0",
        f"{indent}{name}.wide = {_double(values)} convert({name}.values)",
        f"{indent}{name}.indices = {indices} get-tuple-element({name}.out), index=1",
        f"{indent}{root or ''}{name} = ({_double(values)}, {indices}) tuple({name}.wide, {name}.indices)",
    ]


def compare_output(
    index: int, expected: np.ndarray, actual: np.ndarray, compute: str = "", normwise: bool = False
) -> str | None:
    """Why output ``index`` differs from the original, or None if it matches.

    ``compute`` is the module's narrowest compute type (``compute_dtype``):
    inexact outputs are compared at the looser of its tolerance and their own.
    ``normwise``: the relative tolerance is taken of the output's largest
    finite magnitude rather than of each element's (``|a - e| <= atol + rtol *
    max|e|``), as for the same arithmetic reassociated, where an element that
    is a small difference of large terms carries the large terms' rounding.
    """
    name = f"output {index} ({describe(expected)})"
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        return f"{name}: expected {describe(expected)}, got {describe(actual)}"
    if expected.size == 0:
        return None
    if not is_inexact(expected.dtype):
        wrong = expected != actual
        if not wrong.any():
            return None
        e, a = expected.astype(np.int64), actual.astype(np.int64)
        diff = np.where(wrong, np.abs(a - e), 0)
        at = np.unravel_index(int(np.argmax(diff)), diff.shape)
        return (
            f"{name} differs in {int(wrong.sum())} of {expected.size} elements: largest "
            f"difference {diff[at]} at index {tuple(int(i) for i in at)} "
            f"(expected {expected[at]}, got {actual[at]}; integers must be equal)"
        )
    rtol, atol = tolerance(expected.dtype.name, compute)
    complex_ = np.issubdtype(expected.dtype, np.complexfloating)
    e = expected.astype(np.complex128 if complex_ else np.float64)
    a = actual.astype(np.complex128 if complex_ else np.float64)
    same_nan = np.isnan(e) & np.isnan(a)
    same_inf = np.isinf(e) & (e == a)
    finite = np.isfinite(e)
    scale = np.abs(e[finite]).max() if normwise and finite.any() else np.abs(e)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
        ok = same_nan | same_inf | (finite & (diff <= atol + rtol * scale))
    if ok.all():
        return None
    score = np.where(ok, -1.0, np.nan_to_num(diff, nan=np.inf, posinf=np.inf))
    at = np.unravel_index(int(np.argmax(score)), score.shape)
    return (
        f"{name} differs in {int((~ok).sum())} of {expected.size} elements: largest "
        f"difference {diff[at]:.6g} at index {tuple(int(i) for i in at)} "
        f"(expected {e[at]:.6g}, got {a[at]:.6g}; tolerance rtol={rtol:g}"
        f"{f' of the largest magnitude {float(scale):.6g}' if normwise else ''}, atol={atol:g})"
    )


def compare_outputs(
    expected: Sequence[np.ndarray], actual: Sequence[np.ndarray], compute: str = ""
) -> list[str]:
    """Every difference between two executions' outputs (empty: they match)."""
    if len(expected) != len(actual):
        return [f"expected {len(expected)} outputs, got {len(actual)}"]
    found = (compare_output(i, e, a, compute) for i, (e, a) in enumerate(zip(expected, actual)))
    return [f for f in found if f is not None]
