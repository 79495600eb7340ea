"""Worker-side observations: cost analysis, graph, proto bytes, execution.

Imports jax: only worker processes import it (``worker.py`` registers these
functions as handlers). Execution compiles a module with XLA's full CPU
pipeline (default options) and runs it on seeded inputs built from the entry
computation's parameter shapes (``schema.INPUT_INT_HIGH``). Validation draws
its inputs from the module's uses of its parameters (``inputs.py``), compiles
with LLVM at -O0 (``VALIDATION``), and keeps the original's executable,
inputs and outputs per (text digest, seed) in a bounded LRU
(``docs/validation.md``).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.schema import COST_KEYS, INPUT_INT_HIGH, RUNTIME_WARMUP
from xla_service.errors import ExecutionError, ResourceLimitError
from xla_service.passes import jaxlib
from xla_service.passes.compare import (
    compare_output,
    compare_outputs,
    compute_dtype,
    is_inexact,
    widen,
)
from xla_service.passes.hlo_graph import InstructionRecord, build_graph, entry_and_roots
from xla_service.passes.inputs import DRAWS, draws
from xla_service.passes.xla import parse

__all__ = ["cost_analysis", "hlo_graph", "hlo_proto", "runtime", "validate", "make_inputs"]

_OPCODE_NAME = {getattr(jaxlib.hlo.HloOpcode, n): OPCODES[i] for i, n in enumerate(jaxlib.hlo.HloOpcode.__members__)}
_EXECUTABLES: OrderedDict[tuple[str, str], tuple[Any, Any]] = OrderedDict()
_MAX_EXECUTABLES = 4
#: Compile modes: XLA's default options (runtime, cost), and validation's: the
#: same HLO pipeline with LLVM at -O0, about 3 times faster to compile (0.8 s
#: instead of 2.3 s for a 3-layer GPT-2 training step; outputs within 2e-6).
DEFAULT, VALIDATION = "default", "validation"


def _client() -> Any:
    return jaxlib.cpu_client()


def cost_analysis(text: str) -> tuple[float, ...]:
    """XLA's HloCostAnalysis of the module, in ``schema.COST_KEYS`` order.

    0 where XLA reports nothing, and where it reports -1: it cannot cost the
    module (e.g. an unknown custom call), and the spaces' values are >= 0.
    """
    try:
        costs = jaxlib.cost_analysis(_client(), parse(text))
    except Exception as e:  # jaxlib raises JaxRuntimeError
        raise ExecutionError(f"XLA's cost analysis failed on this module: {_first_line(e)}") from None
    return tuple(max(float(costs.get(k, 0.0)), 0.0) for k in COST_KEYS)


def hlo_graph(text: str) -> str:
    """The module as node-link JSON (schema in ``hlo_graph.py``)."""
    records = [
        InstructionRecord(
            computation=computation.name,
            name=instruction.name,
            opcode=_OPCODE_NAME[instruction.opcode],
            text=instruction.to_string(),
            operands=tuple(o.name for o in instruction.operands()),
        )
        for computation in parse(text).computations()
        for instruction in computation.instructions()
    ]
    entry, roots = entry_and_roots(text)
    return json.dumps(build_graph(records, entry, roots), separators=(",", ":"))


def hlo_proto(text: str) -> bytes:
    """The serialized HloModuleProto of the module."""
    return bytes(parse(text).as_serialized_hlo_module_proto())


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _options(mode: str) -> Any:
    options = jaxlib.xla_client.CompileOptions()
    if mode == VALIDATION:
        options.executable_build_options.debug_options.xla_backend_optimization_level = 0
    return options


def _compiled(text: str, mode: str = DEFAULT) -> tuple[Any, Any]:
    """(XlaComputation, executable) of ``text`` with XLA's full CPU pipeline; cached."""
    key = (mode, hashlib.sha256(text.encode()).hexdigest())
    if key in _EXECUTABLES:
        _EXECUTABLES.move_to_end(key)
        return _EXECUTABLES[key]
    computation = jaxlib.hlo.XlaComputation(parse(text).as_serialized_hlo_module_proto())
    client = _client()
    try:
        mlir = jaxlib.mlir.xla_computation_to_mlir_module(computation)
        devices = jaxlib.xla_client.DeviceList(tuple(client.local_devices()))
        executable = client.compile_and_load(mlir, devices, _options(mode))
    except Exception as e:  # unknown custom call, unsupported op, ...
        raise ExecutionError(f"XLA cannot compile this module for CPU: {_first_line(e)}") from None
    _EXECUTABLES[key] = (computation, executable)
    while len(_EXECUTABLES) > _MAX_EXECUTABLES:
        _EXECUTABLES.popitem(last=False)
    return computation, executable


def max_input_bytes() -> int:
    """The most bytes of inputs a module may need (``$XLA_GYM_MAX_INPUT_BYTES``;
    default a quarter of the machine's memory)."""
    value = os.environ.get("XLA_GYM_MAX_INPUT_BYTES", "")
    if value.isdigit():
        return int(value)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4


def _check_input_size(shapes: list[Any]) -> None:
    needed = sum(
        int(np.prod(s.dimensions(), dtype=np.float64)) * np.dtype(s.numpy_dtype()).itemsize
        for s in shapes
        if s.is_array()
    )
    limit = max_input_bytes()
    if needed > limit:
        raise ResourceLimitError(
            f"The module's inputs need {needed:,} bytes, more than the limit of {limit:,} "
            "(XLA_GYM_MAX_INPUT_BYTES): it cannot be executed here"
        )


def make_inputs(computation: Any, seed: int) -> list[np.ndarray]:
    """Seeded arguments for the entry computation's parameters."""
    rng = np.random.default_rng(seed)
    inputs = []
    shapes = list(computation.program_shape().parameter_shapes())
    _check_input_size(shapes)
    for i, shape in enumerate(shapes):
        if not shape.is_array():
            raise ExecutionError(
                f"Cannot build inputs: parameter {i} has shape {shape}, expected an array"
            )
        dtype, dims = np.dtype(shape.numpy_dtype()), tuple(shape.dimensions())
        if dtype == np.bool_:
            inputs.append(rng.integers(0, 2, dims).astype(np.bool_))
        elif np.issubdtype(dtype, np.complexfloating):
            inputs.append((rng.random(dims) + 1j * rng.random(dims)).astype(dtype))
        elif is_inexact(dtype):
            inputs.append(rng.random(dims).astype(dtype))
        else:
            inputs.append(rng.integers(0, INPUT_INT_HIGH, dims).astype(dtype))
    return inputs


def _execute(executable: Any, inputs: list[np.ndarray]) -> tuple[list[Any], float]:
    """Run once on fresh device buffers (a module may donate its inputs); outputs, seconds."""
    device = _client().local_devices()[0]
    buffers = jax.block_until_ready([jax.device_put(a, device) for a in inputs])
    try:
        start = time.perf_counter()
        outputs = jax.block_until_ready(executable.execute(buffers))
        seconds = time.perf_counter() - start
    except Exception as e:
        raise ExecutionError(f"XLA failed executing this module: {_first_line(e)}") from None
    return list(outputs), seconds


def runtime(text: str, repetitions: int, seed: int) -> list[float]:
    """Seconds per execution, ``repetitions`` times, after ``RUNTIME_WARMUP`` unmeasured runs."""
    computation, executable = _compiled(text)
    inputs = make_inputs(computation, seed)
    times = [_execute(executable, inputs)[1] for _ in range(RUNTIME_WARMUP + repetitions)]
    return times[RUNTIME_WARMUP:]


def _signature(computation: Any) -> list[str]:
    """The parameters' dtypes and dimensions, e.g. ``float32[8,16]``."""
    return [
        f"{np.dtype(s.numpy_dtype()).name}[{','.join(str(d) for d in s.dimensions())}]"
        if s.is_array()
        else str(s)
        for s in computation.program_shape().parameter_shapes()
    ]


def _outputs(executable: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(o) for o in _execute(executable, inputs)[0]]


# ------------------------------------------------------------------ validation

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
    #: The widened module's outputs by draw (bf16 rule), computed when first needed.
    widened: dict[int, list[np.ndarray]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def nbytes(self) -> int:
        arrays = [a for draw in self.inputs + self.outputs + list(self.widened.values()) for a in draw]
        return sum(a.nbytes for a in arrays) + len(self.text)


def _draw_inputs(text: str, computation: Any, seeds: list[int], distribution: str) -> list[list[np.ndarray]]:
    shapes = list(computation.program_shape().parameter_shapes())
    _check_input_size(shapes)
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
        computation, record.executable = _compiled(text, VALIDATION)
        record.signature = _signature(computation)
        record.inputs = _draw_inputs(text, computation, record.seeds, distribution)
        for inputs in record.inputs:
            # No false verdicts: the original runs twice, and must agree with itself.
            first, again = _outputs(record.executable, inputs), _outputs(record.executable, inputs)
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
        computation, executable = _compiled(current, VALIDATION)
        got = _signature(computation)
    except ExecutionError as e:
        return verdict("current_failed", [str(e)])
    finally:
        timing["compile_s"] = time.perf_counter() - mark
    if got != record.signature:
        return verdict("current_failed", [f"parameters differ: expected {record.signature}, got {got}"])
    for d, (inputs, expected) in enumerate(zip(record.inputs, record.outputs)):
        mark = time.perf_counter()
        try:
            actual = _outputs(executable, inputs)
        except ExecutionError as e:
            return verdict("current_failed", [str(e)])
        finally:
            timing["execute_s"] += time.perf_counter() - mark
            timing["draws_run"] += 1
        mark = time.perf_counter()
        errors = compare_outputs(expected, actual, record.compute)
        if errors and record.compute and len(expected) == len(actual):
            errors = _against_float32(record, d, current, actual)
        timing["compare_s"] += time.perf_counter() - mark
        if errors:
            where = f" on inputs seed {record.seeds[d]} (draw {d + 1} of {count})"
            return verdict("mismatch", [e + where for e in errors], failed_seed=record.seeds[d])
    return verdict("ok", [])


def _widened_outputs(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    wide = [x.astype(np.float32) if is_inexact(x.dtype) and x.dtype.itemsize < 4 else x for x in inputs]
    return _outputs(_compiled(widen(text), VALIDATION)[1], wide)


def _against_float32(record: _Original, draw: int, current: str, actual: list[np.ndarray]) -> list[str]:
    """The mismatches of a narrow-float module that remain when both modules
    are widened to float32 and compared at float32 tolerance (on draw ``draw``).

    A pass may legally move the rounding of a bf16 module's intermediates,
    and in a deep module that adds up to several rounding steps (measured: a
    GPT-2 bf16 forward pass after ``algsimp``, 0.75 on 18.1), as large as a
    real error. Widened, both compute the same arithmetic without that
    rounding (there: 1.8e-4 apart, 0.11 of float32 tolerance), while a real
    change stands out (one ``multiply`` made an ``add``: 511 times it).
    Normwise (``compare_output``): reassociated float32 sums still differ by
    float32 rounding of their terms (measured: the default pipeline on a
    GPT-2 bf16 SGD step, saturating draw, 3.5e-5 on an element of 0.063 whose
    output reaches 0.90: 0.38 of the normwise tolerance, 2.2 of the
    elementwise one).
    """
    why = ""
    expected = record.outputs[draw]
    reference: list[np.ndarray] | None = None
    widened: list[np.ndarray] = []
    try:
        if draw not in record.widened:
            record.widened[draw] = _widened_outputs(record.text, record.inputs[draw])
        reference = record.widened[draw]
        widened = _widened_outputs(current, record.inputs[draw])
    except Exception as failure:  # a module that cannot be widened (e.g. bitcast-convert of bf16)
        reference, widened, why = [], [], f"not comparable in float32: {_first_line(failure)}"
    errors = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        error = compare_output(i, e, a, record.compute)
        if error is None:
            continue
        if why or reference is None or len(reference) != len(expected) or len(widened) != len(expected):
            errors.append(f"{error}; {why or 'not comparable in float32'}")
        else:
            wide_error = compare_output(i, reference[i], widened[i], normwise=True)
            if wide_error is not None:
                errors.append(f"{error}; widened to float32, {wide_error}")
    return errors
