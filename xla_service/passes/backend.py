"""What XLA's CPU backend makes of a module: ``BackendCost`` (worker side, imports jax).

The module is compiled as ``Runtime`` would compile it (``schema.RUNTIME_PIPELINES``:
``full``, XLA's whole CPU pipeline after the agent's passes; ``agent``, without
XLA's optimizing passes), with LLVM at -O0, and read from XLA's own dumps as
soon as they hold the optimized module and its buffer assignment: the machine
code, which LLVM then makes for every kernel, changes none of it, so that tail
of the compile goes on in a thread (``compile.BACKGROUND``) after the reply,
as a step's does. A module with a ``custom-call`` waits for the whole compile,
whose code generation is where an unknown call target fails. From the dumps: the optimized HLO (the roofline,
``roofline.py``), the temporary buffer of the buffer assignment, and XLA's
``HloCostAnalysis`` of the optimized module, in ``catalog.backend.BACKEND_KEYS``
order. ``tests/passes/test_backend.py`` holds each to what the finished
executable reports (``executable_cost``).
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
import threading
from typing import Any

from xla_service.catalog.backend import BACKEND_KEYS, ROOFLINE
from xla_service.errors import ExecutionError
from xla_service.passes import jaxlib, observe
from xla_service.passes.compile import BACKGROUND, scratch_root
from xla_service.passes.hlo import parse
from xla_service.passes.roofline import Costs, module_costs

__all__ = ["backend_cost", "executable_cost", "optimized_text"]

_POLL_SECONDS = 0.002
#: XLA writes these after the optimized module and its buffer assignment, from
#: the compiling thread: once one exists, both are complete.
_LAST_DUMP = "*cpu_after_optimizations-memory-usage-report.txt"
_TEMP = re.compile(r"^allocation \d+: size (\d+), preallocated-temp:", re.M)
_CUSTOM_CALL = " custom-call("


def optimized_text(executable: Any) -> str:
    """The optimized HLO module(s) of an executable, as XLA prints them."""
    return "\n".join(module.to_string() for module in executable.hlo_modules())


def _values(optimized: str, costs: dict[str, float], temp_bytes: float) -> tuple[float, ...]:
    roofline: Costs = module_costs(optimized, ROOFLINE)
    values = {
        "estimated_seconds": roofline.seconds,
        "flops": costs.get("flops", 0.0),
        "transcendentals": costs.get("transcendentals", 0.0),
        "bytes_accessed": costs.get("bytes accessed", 0.0),
        "temp_bytes": temp_bytes,
        "fusions": roofline.fusions,
        "kernels": roofline.kernels,
    }
    return tuple(max(float(values[k]), 0.0) for k in BACKEND_KEYS)


def executable_cost(text: str, pipeline: str = "full") -> tuple[float, ...]:
    """``BackendCost`` read from the finished executable (slower: waits for LLVM)."""
    _, executable = observe.compiled(text, observe.mode_of(pipeline, analysis=True))
    temp = executable.get_compiled_memory_stats().temp_size_in_bytes
    return _values(optimized_text(executable), executable.cost_analysis() or {}, temp)


def backend_cost(text: str, pipeline: str = "full") -> tuple[float, ...]:
    """``BackendCost`` of ``text`` compiled by XLA's CPU pipeline ``pipeline``.

    Raises :class:`~xla_service.errors.ExecutionError` (XLA's reason) if the
    CPU backend cannot compile the module.
    """
    mode = observe.mode_of(pipeline, analysis=True)
    computation = jaxlib.hlo.XlaComputation(parse(text).as_serialized_hlo_module_proto())
    mlir = jaxlib.mlir.xla_computation_to_mlir_module(computation)
    folder = tempfile.mkdtemp(prefix="backend-", dir=scratch_root())
    options = observe.compile_options(mode)
    options.executable_build_options.debug_options.xla_dump_to = folder
    options.executable_build_options.debug_options.xla_dump_hlo_as_text = True
    outcome: dict[str, str] = {}

    def compile_() -> None:
        client = observe.client()
        try:
            client.compile_and_load(mlir, jaxlib.xla_client.DeviceList(tuple(client.local_devices())), options)
        except Exception as e:  # unknown custom call, unsupported op, ...
            outcome["error"] = observe.first_line(e)

    thread = threading.Thread(target=compile_, name="xla-backend-cost", daemon=True)
    thread.start()
    while not glob.glob(os.path.join(folder, _LAST_DUMP)):
        thread.join(_POLL_SECONDS)
        if not thread.is_alive() and not glob.glob(os.path.join(folder, _LAST_DUMP)):
            shutil.rmtree(folder, ignore_errors=True)
            raise ExecutionError(f"XLA cannot compile this module for CPU: {outcome.get('error', 'no optimized module')}")
    (optimized_path,) = glob.glob(os.path.join(folder, "*cpu_after_optimizations.txt"))
    (assignment_path,) = glob.glob(os.path.join(folder, "*cpu_after_optimizations-buffer-assignment.txt"))
    with open(optimized_path) as f:
        optimized = f.read()
    if _CUSTOM_CALL in optimized:  # its target is looked up in code generation: wait for the verdict
        thread.join()
        if "error" in outcome:
            shutil.rmtree(folder, ignore_errors=True)
            raise ExecutionError(f"XLA cannot compile this module for CPU: {outcome['error']}")
    BACKGROUND.append((thread, folder))  # settled (and the folder removed) before the next request
    with open(assignment_path) as f:
        temp = sum(int(size) for size in _TEMP.findall(f.read()))
    return _values(optimized, jaxlib.cost_analysis(observe.client(), parse(optimized)), float(temp))
