"""Validation: the original and the current module run on the same seeded
inputs, every output compared (``docs/validation.md``).

Worker side (imports jax). Inputs are drawn from the module's uses of its
parameters (``inputs.py``); both modules compile with LLVM at -O0
(``observe.VALIDATION``); the original's executable, inputs and outputs are
kept per (text digest, seed, draws, inputs) in a bounded LRU. An output that
differs gets a second look with both modules widened one float type up
(``_second_look``).
"""
from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from xla_service.errors import ExecutionError
from xla_service.passes.compare import (
    compare_output,
    compare_outputs,
    compute_dtype,
    is_inexact,
    widen,
    widen_to_float64,
)
from xla_service.passes.inputs import DRAWS, draws
from xla_service.passes.observe import (
    VALIDATION,
    check_input_size,
    compiled,
    first_line,
    make_inputs,
    outputs,
    signature,
)

__all__ = ["INPUT_DISTRIBUTIONS", "MAX_ORIGINALS", "MAX_ORIGINAL_BYTES", "validate"]

#: Inputs of validation: ``use`` (``inputs.py``: drawn from each parameter's use
#: in the module) or ``uniform`` (``make_inputs``, what validation drew before).
INPUT_DISTRIBUTIONS = ("use", "uniform")
#: The originals a worker keeps, most recently used first out last: count and bytes.
MAX_ORIGINALS = 4
MAX_ORIGINAL_BYTES = 1 << 30
_ORIGINALS: OrderedDict[tuple[str, int, int, str], _Original] = OrderedDict()


@dataclass
class _Original:
    """A benchmark as loaded, executed once per (text digest, seed, draws, inputs):
    its executable, and its inputs and outputs for every draw."""

    text: str
    seeds: list[int]
    status: str = "ok"  # or not_executable, nondeterministic: no verdict
    errors: list[str] = field(default_factory=list)
    outputs_count: int = 0
    executable: Any = None
    signature: list[str] = field(default_factory=list)
    compute: str = ""
    inputs: list[list[np.ndarray]] = field(default_factory=list)
    outputs: list[list[np.ndarray]] = field(default_factory=list)
    #: The widened module's outputs by draw (the second look), computed when first needed.
    widened: dict[int, list[np.ndarray]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def nbytes(self) -> int:
        arrays = [a for draw in self.inputs + self.outputs + list(self.widened.values()) for a in draw]
        return sum(a.nbytes for a in arrays) + len(self.text)


def _draw_inputs(text: str, computation: Any, seeds: list[int], distribution: str) -> list[list[np.ndarray]]:
    shapes = list(computation.program_shape().parameter_shapes())
    check_input_size(shapes)
    for i, shape in enumerate(shapes):
        if not shape.is_array():
            raise ExecutionError(f"Cannot build inputs: parameter {i} has shape {shape}, expected an array")
    if distribution == "uniform":
        return [make_inputs(computation, s) for s in seeds]
    if distribution != "use":
        raise ValueError(f"Expected inputs in {INPUT_DISTRIBUTIONS}, got {distribution!r}")
    arrays = [(np.dtype(s.numpy_dtype()), tuple(s.dimensions())) for s in shapes]
    return draws(text, arrays, seeds[0], len(seeds))


def _original(text: str, seed: int, count: int, distribution: str) -> tuple[_Original, bool]:
    """The original's record (cached) and whether it was cached already."""
    key = (hashlib.sha256(text.encode()).hexdigest(), seed, count, distribution)
    if key in _ORIGINALS:
        _ORIGINALS.move_to_end(key)
        return _ORIGINALS[key], True
    start = time.perf_counter()
    record = _Original(text, [seed + k for k in range(count)], compute=compute_dtype(text))
    try:
        computation, record.executable = compiled(text, VALIDATION)
        record.signature = signature(computation)
        record.inputs = _draw_inputs(text, computation, record.seeds, distribution)
        for inputs in record.inputs:
            # No false verdicts: the original runs twice, and must agree with itself.
            first, again = outputs(record.executable, inputs), outputs(record.executable, inputs)
            record.outputs_count = len(first)
            unstable = compare_outputs(first, again)
            if unstable:
                record.status, record.errors = "nondeterministic", unstable
                break
            record.outputs.append(first)
    except ExecutionError as e:
        record.status, record.errors, record.outputs_count = "not_executable", [str(e)], 0
    record.seconds = time.perf_counter() - start
    _ORIGINALS[key] = record
    while len(_ORIGINALS) > 1 and (
        len(_ORIGINALS) > MAX_ORIGINALS or sum(r.nbytes for r in _ORIGINALS.values()) > MAX_ORIGINAL_BYTES
    ):
        _ORIGINALS.popitem(last=False)
    return record, False


def validate(
    original: str, current: str, seed: int, count: int = DRAWS, distribution: str = "use"
) -> dict[str, Any]:
    """Execute both modules on the same seeded inputs and compare every output.

    ``count`` draws of inputs, seeds ``seed`` .. ``seed + count - 1``, from
    ``distribution`` (``INPUT_DISTRIBUTIONS``); the first draw whose outputs
    differ decides. ``status`` is ``ok``, ``mismatch`` (outputs differ),
    ``current_failed`` (the current module does not compile, run, or take the
    same parameters), ``nondeterministic`` (the original's two runs differ: no
    verdict) or ``not_executable`` (the original cannot run on CPU: no
    verdict); ``errors`` says why, ``outputs`` counts the outputs, ``draws``
    and ``seeds`` give the inputs, ``failed_seed`` the draw that differs, and
    ``timing`` where the seconds went (``original_s`` is 0 when cached).
    """
    if count < 1:
        raise ValueError(f"Expected at least 1 draw of inputs, got {count}")
    start = time.perf_counter()
    record, cached = _original(original, seed, count, distribution)
    timing: dict[str, Any] = {
        "original_s": 0.0 if cached else record.seconds,
        "original_cached": cached,
        "compile_s": 0.0,
        "execute_s": 0.0,
        "compare_s": 0.0,
        "second_look_s": 0.0,
        "draws_run": 0,
    }
    reply: dict[str, Any] = {"outputs": record.outputs_count, "draws": count, "seeds": record.seeds}

    def verdict(status: str, errors: list[str], **more: Any) -> dict[str, Any]:
        timing["total_s"] = time.perf_counter() - start
        return {**reply, "status": status, "errors": errors, "timing": timing, **more}

    if record.status != "ok":
        return verdict(record.status, record.errors)
    mark = time.perf_counter()
    try:
        computation, executable = compiled(current, VALIDATION)
        got = signature(computation)
    except ExecutionError as e:
        return verdict("current_failed", [str(e)])
    finally:
        timing["compile_s"] = time.perf_counter() - mark
    if got != record.signature:
        return verdict("current_failed", [f"parameters differ: expected {record.signature}, got {got}"])
    for d, (inputs, expected) in enumerate(zip(record.inputs, record.outputs)):
        mark = time.perf_counter()
        try:
            actual = outputs(executable, inputs)
        except ExecutionError as e:
            return verdict("current_failed", [str(e)])
        finally:
            timing["execute_s"] += time.perf_counter() - mark
            timing["draws_run"] += 1
        mark = time.perf_counter()
        errors = compare_outputs(expected, actual, record.compute)
        if errors and len(expected) == len(actual):
            look = time.perf_counter()
            errors = _second_look(record, d, current, actual)
            timing["second_look_s"] += time.perf_counter() - look
        timing["compare_s"] += time.perf_counter() - mark
        if errors:
            where = f" on inputs seed {record.seeds[d]} (draw {d + 1} of {count})"
            return verdict("mismatch", [e + where for e in errors], failed_seed=record.seeds[d])
    return verdict("ok", [])


def _widened_outputs(text: str, inputs: list[np.ndarray], to_float64: bool) -> list[np.ndarray]:
    if not to_float64:
        wide = [x.astype(np.float32) if is_inexact(x.dtype) and x.dtype.itemsize < 4 else x for x in inputs]
        return outputs(compiled(widen(text), VALIDATION)[1], wide)
    doubled = {np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128}
    wide = [x.astype(doubled[x.dtype]) if x.dtype in doubled else x for x in inputs]
    with jax.enable_x64(True):  # else jax hands float64 inputs over as float32
        return outputs(compiled(widen_to_float64(text), VALIDATION)[1], wide)


def _second_look(record: _Original, draw: int, current: str, actual: list[np.ndarray]) -> list[str]:
    """The mismatches that remain when both modules are widened one float type
    up and compared at the original outputs' tolerance (on draw ``draw``).

    *A narrow-float module* (bf16, f16, f8) is widened to float32. A pass may
    legally move the rounding of a bf16 module's intermediates, and in a deep
    module that adds up to several rounding steps (measured: a GPT-2 bf16
    forward pass after ``algsimp``, 0.75 on 18.1), as large as a real error.
    Widened, both compute the same arithmetic without that rounding (there:
    1.8e-4 apart, 0.11 of float32 tolerance), while a real change stands out
    (one ``multiply`` made an ``add``: 511 times it). Normwise
    (``compare_output``): reassociated float32 sums still differ by float32
    rounding of their terms (measured: the default pipeline on a GPT-2 bf16
    SGD step, saturating draw, 3.5e-5 on an element of 0.063 whose output
    reaches 0.90: 0.38 of the normwise tolerance, 2.2 of the elementwise one).

    *A float32 module* is widened to float64 and compared elementwise at
    float32 tolerance, the float64 outputs rounded to float32: where an
    output is a small difference of large terms (a training step's gradient),
    float32 rounding alone moves it beyond float32 tolerance (measured: a
    generated SGD step, 6.2 times the tolerance between its own float32 and
    float64 runs, and XLA's default pipeline 4.3e-4 away on an element of
    3.85), while widened to float64 the two agree within float32 tolerance.
    """
    narrow = bool(record.compute)
    look = "float32" if narrow else "float64"
    why = ""
    expected = record.outputs[draw]
    reference: list[np.ndarray] = []
    widened: list[np.ndarray] = []
    try:
        if draw not in record.widened:
            record.widened[draw] = _widened_outputs(record.text, record.inputs[draw], not narrow)
        reference = record.widened[draw]
        widened = _widened_outputs(current, record.inputs[draw], not narrow)
    except Exception as failure:  # a module that cannot be widened
        why = f"not comparable in {look}: {first_line(failure)}"
    if len(reference) != len(expected) or len(widened) != len(expected):
        why = why or f"not comparable in {look}"
    errors = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        error = compare_output(i, e, a, record.compute)
        if error is None:
            continue
        if why:
            errors.append(f"{error}; {why}")
            continue
        if narrow:
            wide_error = compare_output(i, reference[i], widened[i], normwise=True)
        else:
            wide_error = compare_output(i, _like(reference[i], e), _like(widened[i], e))
        if wide_error is not None:
            errors.append(f"{error}; widened to {look}, {wide_error}")
    return errors


def _like(wide: np.ndarray, original: np.ndarray) -> np.ndarray:
    """A float64 output rounded back to the original's float32 (integers as they are)."""
    return wide.astype(original.dtype) if is_inexact(original.dtype) and wide.dtype != original.dtype else wide
