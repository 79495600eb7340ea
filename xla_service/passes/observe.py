"""Worker-side observations: cost analysis, graph, proto bytes, executable digest, execution.

Imports jax: only worker processes import it (``worker.py`` registers these
functions as handlers). Execution compiles a module with XLA's full CPU
pipeline (default options; ``AGENT``: with ``passes.RUNTIME_OPTIMIZATIONS``
disabled, the session's ``xla.runtime.pipeline=agent``) and runs it on seeded
inputs built from the entry computation's parameter shapes
(``schema.INPUT_INT_HIGH``). Validation (``validation.py``) compiles with LLVM
at -O0 (``VALIDATION``) through the same executable cache.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections import OrderedDict
from typing import Any

import jax
import numpy as np

from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.passes import RUNTIME_OPTIMIZATIONS
from xla_service.catalog.schema import COST_KEYS, INPUT_INT_HIGH, RUNTIME_WARMUP
from xla_service.errors import ExecutionError, ResourceLimitError
from xla_service.passes import jaxlib
from xla_service.passes.compare import is_inexact
from xla_service.passes.hlo_graph import InstructionRecord, build_graph, entry_and_roots
from xla_service.passes.xla import parse

__all__ = [
    "AGENT",
    "AGENT_O0",
    "DEFAULT",
    "VALIDATION",
    "check_input_size",
    "client",
    "compile_options",
    "compiled",
    "cost_analysis",
    "executable_digest",
    "execute",
    "first_line",
    "hlo_graph",
    "hlo_proto",
    "make_inputs",
    "mode_of",
    "outputs",
    "runtime",
    "signature",
]

_OPCODE_NAME = {getattr(jaxlib.hlo.HloOpcode, n): OPCODES[i] for i, n in enumerate(jaxlib.hlo.HloOpcode.__members__)}
_EXECUTABLES: OrderedDict[tuple[str, str], tuple[Any, Any]] = OrderedDict()
_MAX_EXECUTABLES = 4
#: Compile modes: XLA's default options (runtime, cost), and validation's: the
#: same HLO pipeline with LLVM at -O0, about 3 times faster to compile (0.8 s
#: instead of 2.3 s for a 3-layer GPT-2 training step; outputs within 2e-6).
DEFAULT, VALIDATION = "default", "validation"
#: The ``agent`` runtime pipeline (``schema.RUNTIME_PIPELINES``): XLA's CPU
#: pipeline without its optimizing passes, which the agent's order stands for;
#: ``AGENT_O0`` the same with LLVM at -O0.
AGENT, AGENT_O0 = "agent", "agent-o0"
_MODES = {"full": DEFAULT, "agent": AGENT}
#: What ``backend.py`` compiles with: LLVM's optimization level changes the machine
#: code, not the optimized HLO, its cost analysis or its buffers (checked by
#: ``tests/passes/test_backend.py``), and -O0 compiles 2-3 times faster.
_ANALYSIS_MODES = {"full": VALIDATION, "agent": AGENT_O0}


def mode_of(pipeline: str, analysis: bool = False) -> str:
    """The compile mode of a ``schema.RUNTIME_PIPELINES`` name: to run the executable,
    or (``analysis``) only to read what XLA made of the module."""
    if pipeline not in _MODES:
        raise ValueError(f"Expected a runtime pipeline in {list(_MODES)}, got {pipeline!r}")
    return (_ANALYSIS_MODES if analysis else _MODES)[pipeline]


def client() -> Any:
    """The CPU client jax uses."""
    return jaxlib.cpu_client()


def cost_analysis(text: str) -> tuple[float, ...]:
    """XLA's HloCostAnalysis of the module, in ``schema.COST_KEYS`` order.

    0 where XLA reports nothing, and where it reports -1: it cannot cost the
    module (e.g. an unknown custom call), and the spaces' values are >= 0.
    """
    try:
        costs = jaxlib.cost_analysis(client(), parse(text))
    except Exception as e:  # jaxlib raises JaxRuntimeError
        raise ExecutionError(f"XLA's cost analysis failed on this module: {first_line(e)}") from None
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


def executable_digest(text: str, pipeline: str = "full") -> str:
    """sha256 of the module(s) XLA's CPU pipeline (``pipeline``) makes of ``text``,
    printed as XLA prints modules for fingerprints (canonical names, no metadata).

    Equal digests mean the same optimized HLO, so the same executable: two
    modules with equal digests differ in runtime only by measurement noise.
    """
    _, executable = compiled(text, mode_of(pipeline))
    options = jaxlib.hlo.HloPrintOptions.fingerprint()
    printed = "\n".join(module.to_string(options) for module in executable.hlo_modules())
    return hashlib.sha256(printed.encode()).hexdigest()


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def compile_options(mode: str) -> Any:
    """The compile options of ``mode`` (a fresh object: callers may add dump flags)."""
    options = jaxlib.xla_client.CompileOptions()
    debug = options.executable_build_options.debug_options
    if mode in (VALIDATION, AGENT_O0):
        debug.xla_backend_optimization_level = 0
    if mode in (AGENT, AGENT_O0):
        debug.xla_disable_hlo_passes = ",".join(RUNTIME_OPTIMIZATIONS)
    return options


def compiled(text: str, mode: str = DEFAULT) -> tuple[Any, Any]:
    """(XlaComputation, executable) of ``text`` with XLA's CPU pipeline (``mode``); cached."""
    key = (mode, hashlib.sha256(text.encode()).hexdigest())
    if key in _EXECUTABLES:
        _EXECUTABLES.move_to_end(key)
        return _EXECUTABLES[key]
    computation = jaxlib.hlo.XlaComputation(parse(text).as_serialized_hlo_module_proto())
    cpu = client()
    try:
        mlir = jaxlib.mlir.xla_computation_to_mlir_module(computation)
        devices = jaxlib.xla_client.DeviceList(tuple(cpu.local_devices()))
        executable = cpu.compile_and_load(mlir, devices, compile_options(mode))
    except Exception as e:  # unknown custom call, unsupported op, ...
        raise ExecutionError(f"XLA cannot compile this module for CPU: {first_line(e)}") from None
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


def check_input_size(shapes: list[Any]) -> None:
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
    check_input_size(shapes)
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


def execute(executable: Any, inputs: list[np.ndarray]) -> tuple[list[Any], float, float]:
    """Run once on fresh device buffers (a module may donate its inputs): outputs, seconds,
    and the process's CPU seconds meanwhile (every thread's; unlike seconds, not counting
    the time other processes held the CPU)."""
    device = client().local_devices()[0]
    buffers = jax.block_until_ready([jax.device_put(a, device) for a in inputs])
    try:
        start, cpu = time.perf_counter(), time.process_time()
        outputs = jax.block_until_ready(executable.execute(buffers))
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    except Exception as e:
        raise ExecutionError(f"XLA failed executing this module: {first_line(e)}") from None
    return list(outputs), seconds, cpu_seconds


def runtime(text: str, repetitions: int, seed: int, pipeline: str = "full") -> list[float]:
    """Seconds per execution, ``repetitions`` times, after ``RUNTIME_WARMUP`` unmeasured runs."""
    computation, executable = compiled(text, mode_of(pipeline))
    inputs = make_inputs(computation, seed)
    times = [execute(executable, inputs)[1] for _ in range(RUNTIME_WARMUP + repetitions)]
    return times[RUNTIME_WARMUP:]


def signature(computation: Any) -> list[str]:
    """The parameters' dtypes and dimensions, e.g. ``float32[8,16]``."""
    return [
        f"{np.dtype(s.numpy_dtype()).name}[{','.join(str(d) for d in s.dimensions())}]"
        if s.is_array()
        else str(s)
        for s in computation.program_shape().parameter_shapes()
    ]


def outputs(executable: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(o) for o in execute(executable, inputs)[0]]
