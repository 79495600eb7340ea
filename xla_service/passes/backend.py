"""What XLA's CPU backend makes of a module: ``BackendCost`` (worker side, imports jax).

The module is compiled as ``Runtime`` would compile it (``schema.RUNTIME_PIPELINES``:
``full``, XLA's whole CPU pipeline after the agent's passes; ``agent``, without
XLA's optimizing passes), with LLVM at -O0: the optimized HLO, its cost
analysis and its buffer assignment are the same at every LLVM level, and -O0
compiles 2-3 times faster. From the executable: XLA's ``cost_analysis()``, the
temporary bytes of its buffer assignment, and the roofline estimate over its
optimized module (``roofline.py``), in ``catalog.backend.BACKEND_KEYS`` order.
"""
from __future__ import annotations

from typing import Any

from xla_service.catalog.backend import BACKEND_KEYS, ROOFLINE
from xla_service.passes import observe
from xla_service.passes.roofline import Costs, module_costs

__all__ = ["backend_cost", "optimized_text"]


def optimized_text(executable: Any) -> str:
    """The optimized HLO module(s) of an executable, as XLA prints them."""
    return "\n".join(module.to_string() for module in executable.hlo_modules())


def backend_cost(text: str, pipeline: str = "full") -> tuple[float, ...]:
    """``BackendCost`` of ``text`` compiled by XLA's CPU pipeline ``pipeline``.

    Raises :class:`~xla_service.errors.ExecutionError` (XLA's reason) if the
    CPU backend cannot compile the module.
    """
    _, executable = observe.compiled(text, observe.mode_of(pipeline, analysis=True))
    analysis = executable.cost_analysis() or {}
    memory = executable.get_compiled_memory_stats()
    costs = Costs()
    for module in executable.hlo_modules():
        one = module_costs(module.to_string(), ROOFLINE)
        costs.seconds += one.seconds
        costs.fusions += one.fusions
        costs.kernels += one.kernels
    values = {
        "estimated_seconds": costs.seconds,
        "flops": analysis.get("flops", 0.0),
        "transcendentals": analysis.get("transcendentals", 0.0),
        "bytes_accessed": analysis.get("bytes accessed", 0.0),
        "temp_bytes": memory.temp_size_in_bytes,
        "fusions": costs.fusions,
        "kernels": costs.kernels,
    }
    return tuple(max(float(values[k]), 0.0) for k in BACKEND_KEYS)
