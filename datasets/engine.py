"""The XLA calls the dataset generator needs, on top of ``xla_service.passes.xla``.

The project's in-process XLA glue (``xla_service/passes/xla.py``) is the one
source of truth for parsing, normalization (HLO -> StableHLO -> HLO fixpoint
with canonical computation names), op counts and XLA's default pipeline, so
that the numbers in the manifests are exactly what an agent is shown. This
module only adapts that API and adds what it does not provide: XLA's cost
analysis, and compiling and executing a module on CPU for verification.
"""
from __future__ import annotations

import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from xla_service.passes import xla as _xla
from xla_service.passes.hlo import to_mlir

__all__ = [
    "normalize",
    "parse",
    "op_count",
    "default_pipeline",
    "compile_with_default",
    "cost_analysis",
    "parameter_shapes",
    "execute",
]

from xla_service.catalog.schema import COST_KEYS as _COST_KEYS  # noqa: E402


def normalize(text: str) -> str:
    """HLO -> StableHLO -> HLO fixpoint (what every pass receives)."""
    return _xla.normalize(text)


def parse(text: str) -> Any:
    return _xla.parse(text)


def op_count(text: str) -> int:
    """Instructions over all computations, other than parameter and constant."""
    return _xla.analyze(text).op_count


def default_pipeline(text: str) -> str:
    """XLA's default target-independent result (normalized), as HLO text."""
    with tempfile.TemporaryDirectory(prefix="xla-gym-default-") as d:
        return _xla.default_pipeline(text, d).text


def _client():
    from xla_service.passes.jaxlib import cpu_client

    return cpu_client()


def compile_with_default(text: str, fast_codegen: bool = True) -> tuple[Any, str]:
    """One CPU compile with default options giving both the loaded executable
    and XLA's default target-independent result (normalized text).

    Dumps only the modules around ``layout-assignment`` (cheap, where
    :func:`xla_service.passes.xla.default_pipeline` dumps after every pass)
    and reads the result with the same rule
    (``xla_service.passes.dumps.default_pipeline_dump``); falls back to
    :func:`default_pipeline` if that dump is missing.

    ``fast_codegen`` lowers only LLVM's effort (``xla_backend_optimization_level=0``,
    ``xla_llvm_disable_expensive_passes``): about 40% less compile time. The
    HLO passes, hence the default-pipeline result, are the same
    (``tests/datasets/test_models.py`` checks it against
    :func:`default_pipeline`); the executable is only used for verification.
    """
    from xla_service.passes.dumps import default_pipeline_dump
    from xla_service.passes.jaxlib import xla_client

    with tempfile.TemporaryDirectory(prefix="xla-gym-default-") as d:
        options = xla_client.CompileOptions()
        debug = options.executable_build_options.debug_options
        debug.xla_dump_to = d
        debug.xla_dump_hlo_as_text = True
        debug.xla_dump_hlo_pass_re = "layout-assignment"
        if fast_codegen:
            debug.xla_backend_optimization_level = 0
            debug.xla_llvm_disable_expensive_passes = True
        client = _client()
        executable = client.compile_and_load(
            to_mlir(parse(text)), xla_client.DeviceList(tuple(client.local_devices())), options
        )
        path = default_pipeline_dump(d)
        if path is not None and ".before_layout-assignment." in path:
            with open(path) as f:
                return executable, _xla.load(f.read()).text
    return executable, default_pipeline(text)


def cost_analysis(text: str) -> dict[str, float]:
    """XLA's HloCostAnalysis totals for the module (per-operand entries dropped)."""
    from xla_service.passes.jaxlib import cost_analysis as xla_cost_analysis

    cost = xla_cost_analysis(_client(), parse(text))
    return {k: float(cost[k]) for k in _COST_KEYS if k in cost}


def parameter_shapes(text: str) -> list[tuple]:
    """``[(shape_tuple, numpy_dtype), ...]`` of the entry computation's parameters."""
    from xla_service.passes.jaxlib import hlo

    comp = hlo.XlaComputation(parse(text).as_serialized_hlo_module_proto())
    return [
        (tuple(s.dimensions()), np.dtype(s.numpy_dtype()))
        for s in comp.program_shape().parameter_shapes()
    ]


def execute(executable, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run a compiled module on host arrays; returns its outputs as numpy arrays."""
    import jax

    device_inputs = [jax.device_put(np.asarray(x)) for x in inputs]
    return [np.asarray(o) for o in executable.execute(device_inputs)]
