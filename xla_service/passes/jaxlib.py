"""jaxlib's XLA bindings: the one module that reaches into jax's private packages.

jax has no public API for what the engine needs (parsing HLO text, the HLO <->
StableHLO conversion, compile options with XLA's debug flags, cost analysis of
an ``HloModule``); they come from ``jax._src`` and change with jaxlib, which is
pinned. Imported by worker processes only (it imports jax).
"""
from __future__ import annotations

from typing import Any

from jax._src import xla_bridge
from jax._src.lib import _jax, hlo, xla_client

__all__ = ["hlo", "xla_client", "mlir", "cost_analysis", "cpu_client"]

#: HLO <-> StableHLO conversion (``xla_computation_to_mlir_module``, ...).
mlir = _jax.mlir
#: ``HloCostAnalysis`` of an ``HloModule``: ``cost_analysis(client, module) -> dict``.
cost_analysis = _jax.hlo_module_cost_analysis


def cpu_client() -> Any:
    """The CPU PJRT client jax uses."""
    return xla_bridge.get_backend("cpu")
