"""Worker-side observations: cost analysis, graph, proto bytes, execution.

Imports jax: only worker processes import it (``worker.py`` registers these
functions as handlers). Execution compiles a module with XLA's full CPU
pipeline (default options) and runs it on seeded inputs built from the entry
computation's parameter shapes (``schema.INPUT_INT_HIGH``).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections import OrderedDict
from typing import Any, Dict, List, Tuple

import jax
import numpy as np
from jax._src import xla_bridge
from jax._src.lib import _jax, hlo, xla_client

from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.schema import COST_KEYS, INPUT_INT_HIGH, RUNTIME_WARMUP
from xla_service.errors import ExecutionError, ResourceLimitError
from xla_service.passes.compare import (
    compare_output,
    compare_outputs,
    compute_dtype,
    is_inexact,
    widen,
)
from xla_service.passes.hlo_graph import InstructionRecord, build_graph, entry_and_roots
from xla_service.passes.xla import parse

__all__ = ["cost_analysis", "hlo_graph", "hlo_proto", "runtime", "validate", "make_inputs"]

_OPCODE_NAME = {getattr(hlo.HloOpcode, n): OPCODES[i] for i, n in enumerate(hlo.HloOpcode.__members__)}
_EXECUTABLES: "OrderedDict[str, Tuple[Any, Any]]" = OrderedDict()
_MAX_EXECUTABLES = 4


def _client() -> Any:
    return xla_bridge.get_backend("cpu")


def cost_analysis(text: str) -> Tuple[float, ...]:
    """XLA's HloCostAnalysis of the module, in ``schema.COST_KEYS`` order.

    0 where XLA reports nothing, and where it reports -1: it cannot cost the
    module (e.g. an unknown custom call), and the spaces' values are >= 0.
    """
    try:
        costs = _jax.hlo_module_cost_analysis(_client(), parse(text))
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


def _compiled(text: str) -> Tuple[Any, Any]:
    """(XlaComputation, executable) of ``text`` with XLA's full CPU pipeline; cached."""
    key = hashlib.sha256(text.encode()).hexdigest()
    if key in _EXECUTABLES:
        _EXECUTABLES.move_to_end(key)
        return _EXECUTABLES[key]
    computation = hlo.XlaComputation(parse(text).as_serialized_hlo_module_proto())
    client = _client()
    try:
        mlir = _jax.mlir.xla_computation_to_mlir_module(computation)
        devices = xla_client.DeviceList(tuple(client.local_devices()))
        executable = client.compile_and_load(mlir, devices, xla_client.CompileOptions())
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


def _check_input_size(shapes: List[Any]) -> None:
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


def make_inputs(computation: Any, seed: int) -> List[np.ndarray]:
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


def _execute(executable: Any, inputs: List[np.ndarray]) -> Tuple[List[Any], float]:
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


def runtime(text: str, repetitions: int, seed: int) -> List[float]:
    """Seconds per execution, ``repetitions`` times, after ``RUNTIME_WARMUP`` unmeasured runs."""
    computation, executable = _compiled(text)
    inputs = make_inputs(computation, seed)
    times = [_execute(executable, inputs)[1] for _ in range(RUNTIME_WARMUP + repetitions)]
    return times[RUNTIME_WARMUP:]


def _signature(computation: Any) -> List[str]:
    """The parameters' dtypes and dimensions, e.g. ``float32[8,16]``."""
    return [
        f"{np.dtype(s.numpy_dtype()).name}[{','.join(str(d) for d in s.dimensions())}]"
        if s.is_array()
        else str(s)
        for s in computation.program_shape().parameter_shapes()
    ]


def _outputs(executable: Any, inputs: List[np.ndarray]) -> List[np.ndarray]:
    return [np.asarray(o) for o in _execute(executable, inputs)[0]]


def validate(original: str, current: str, seed: int) -> Dict[str, Any]:
    """Execute both modules on the same seeded inputs and compare every output.

    ``status`` is ``ok``, ``mismatch`` (outputs differ), ``current_failed``
    (the current module does not compile, run, or take the same parameters),
    ``nondeterministic`` (the original's two runs differ: no verdict) or
    ``not_executable`` (the original cannot run on CPU: no verdict);
    ``errors`` says why.
    """
    try:
        computation, executable = _compiled(original)
        inputs = make_inputs(computation, seed)
        expected = _outputs(executable, inputs)
        again = _outputs(executable, inputs)
    except ExecutionError as e:
        return {"status": "not_executable", "outputs": 0, "errors": [str(e)]}
    unstable = compare_outputs(expected, again)
    if unstable:
        return {"status": "nondeterministic", "outputs": len(expected), "errors": unstable}
    failed: Dict[str, Any] = {"status": "current_failed", "outputs": len(expected)}
    try:
        current_computation, current_executable = _compiled(current)
        wanted, got = _signature(computation), _signature(current_computation)
        if wanted != got:
            return {**failed, "errors": [f"parameters differ: expected {wanted}, got {got}"]}
        actual = _outputs(current_executable, inputs)
    except ExecutionError as e:
        return {**failed, "errors": [str(e)]}
    compute = compute_dtype(original)
    errors = compare_outputs(expected, actual, compute)
    if errors and compute and len(expected) == len(actual):
        errors = _against_float32(original, current, inputs, expected, actual, compute)
    return {"status": "mismatch" if errors else "ok", "outputs": len(expected), "errors": errors}


def _against_float32(
    original: str, current: str, inputs: List[np.ndarray], expected: List[np.ndarray], actual: List[np.ndarray], compute: str
) -> List[str]:
    """The mismatches of a narrow-float module that remain when both modules
    are widened to float32 and compared at float32 tolerance.

    A pass may legally move the rounding of a bf16 module's intermediates,
    and in a deep module that adds up to several rounding steps (measured: a
    GPT-2 bf16 forward pass after ``algsimp``, 0.75 on 18.1), as large as a
    real error. Widened, both compute the same arithmetic without that
    rounding (there: 1.8e-4 apart, 0.11 of float32 tolerance), while a real
    change stands out (one ``multiply`` made an ``add``: 511 times it).
    """
    why = ""
    try:
        wide = [x.astype(np.float32) if is_inexact(x.dtype) and x.dtype.itemsize < 4 else x for x in inputs]
        reference = _outputs(_compiled(widen(original))[1], wide)
        widened = _outputs(_compiled(widen(current))[1], wide)
    except Exception as failure:  # a module that cannot be widened (e.g. bitcast-convert of bf16)
        reference, widened, why = [], [], f"not comparable in float32: {_first_line(failure)}"
    errors = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        error = compare_output(i, e, a, compute)
        if error is None:
            continue
        if why or len(reference) != len(expected) or len(widened) != len(expected):
            errors.append(f"{error}; {why or 'not comparable in float32'}")
        else:
            wide_error = compare_output(i, reference[i], widened[i])
            if wide_error is not None:
                errors.append(f"{error}; widened to float32, {wide_error}")
    return errors
