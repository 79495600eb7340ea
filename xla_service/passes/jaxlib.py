"""jaxlib's XLA bindings: the one module that reaches into jax's private packages.

jax has no public API for what the engine needs (parsing HLO text, the HLO <->
StableHLO conversion, compile options with XLA's debug flags, cost analysis of
an ``HloModule``); they come from ``jax._src`` and change with jaxlib, which is
pinned. Imported by worker processes only (it imports jax).
"""
from __future__ import annotations

import os
from typing import Any

#: XLA writes a constant of more than 10 elements as ``constant({...})`` in its
#: dumps unless this flag is set, and its parser reads ``{...}`` back as
#: garbage: a pass that folds such a constant would hand the next step a
#: module that computes something else (``hlo.py`` prints them in full too).
#: XLA reads XLA_FLAGS once, when jax first starts a backend: set before that.
LARGE_CONSTANTS_FLAG = "--xla_dump_large_constants=true"
if LARGE_CONSTANTS_FLAG not in os.environ.get("XLA_FLAGS", "").split():
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {LARGE_CONSTANTS_FLAG}".strip()

from jax._src import xla_bridge  # noqa: E402
from jax._src.lib import _jax, hlo, xla_client  # noqa: E402

__all__ = ["hlo", "xla_client", "mlir", "cost_analysis", "cpu_client", "LARGE_CONSTANTS_FLAG"]

#: HLO <-> StableHLO conversion (``xla_computation_to_mlir_module``, ...).
mlir = _jax.mlir
#: ``HloCostAnalysis`` of an ``HloModule``: ``cost_analysis(client, module) -> dict``.
cost_analysis = _jax.hlo_module_cost_analysis


def cpu_client() -> Any:
    """The CPU PJRT client jax uses."""
    return xla_bridge.get_backend("cpu")
