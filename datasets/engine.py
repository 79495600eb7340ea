"""The XLA calls the dataset generator needs, on top of ``xla_service.passes.xla``.

The project's in-process XLA glue (``xla_service/passes/xla.py``) is the one
source of truth for normalization and for XLA's default pipeline, so that the
op counts in the manifests are exactly what an agent is shown. This module
only adapts its API and adds what it does not provide: a plain op count,
XLA's cost analysis, and execution on CPU for verification.
"""
from __future__ import annotations

import re
import tempfile
from typing import Any, Dict, List, Sequence

import numpy as np

from xla_service.opcodes import OPCODES, UNCOUNTED_OPCODES
from xla_service.passes import xla as _xla

__all__ = ["normalize", "parse", "op_count", "default_pipeline", "cost_analysis", "execute"]

_COST_KEYS = ("flops", "transcendentals", "bytes accessed", "optimal_seconds")
_COUNTED = tuple(i for i, name in enumerate(OPCODES) if name not in UNCOUNTED_OPCODES)


_HEADER = re.compile(r"^(ENTRY )?(%?)([^\s{(]+)(.*\{)$", re.M)
_REF_KEYS = (
    "to_apply|calls|body|condition|true_computation|false_computation"
    "|branch_computations|called_computations"
)
_REF = re.compile(r"\b(" + _REF_KEYS + r")=(\{[^}]*\}|%?[^\s,{}()]+)")
_SUFFIX = re.compile(r"(\.\d+)+$")
_MAX_ROUND_TRIPS = 4


def canonicalize_computation_names(text: str) -> str:
    """Rename every non-entry computation ``<base>.<k>``, ``k`` its rank among same-base ones.

    The StableHLO -> HLO export appends a ``.N`` to the name of every
    computation that was a ``func.func`` (the targets of ``call``), on every
    trip, so a module with calls never reaches a textual fixpoint
    (``tril.1`` -> ``tril.1.1`` -> ...). Renaming them by order of appearance
    after stripping numeric suffixes makes the result stable; nothing but
    names changes.
    """
    mapping = {}
    seen: Dict[str, int] = {}
    for m in _HEADER.finditer(text):
        if m.group(1):  # the entry computation keeps its (stable) name
            continue
        old = m.group(3)
        base = _SUFFIX.sub("", old) or old
        k = seen.get(base, 0)
        seen[base] = k + 1
        mapping[old] = f"{base}.{k}"
    if all(k == v for k, v in mapping.items()):
        return text

    def header(m):
        if m.group(1):
            return m.group(0)
        return f"{m.group(2)}{mapping.get(m.group(3), m.group(3))}{m.group(4)}"

    def one(name: str) -> str:
        bare = name.lstrip("%")
        return name[: len(name) - len(bare)] + mapping.get(bare, bare)

    def ref(m):
        value = m.group(2)
        if value.startswith("{"):
            names = [one(n.strip()) for n in value[1:-1].split(",") if n.strip()]
            return f"{m.group(1)}={{{', '.join(names)}}}"
        return f"{m.group(1)}={one(value)}"

    return _REF.sub(ref, _HEADER.sub(header, text))


def normalize(text: str) -> str:
    """HLO -> StableHLO -> HLO fixpoint (what every pass receives).

    Uses ``xla_service.passes.xla``'s round trip, plus
    :func:`canonicalize_computation_names` after each trip, because the plain
    round trip of a module with ``call`` instructions is never a fixpoint.
    """
    current = canonicalize_computation_names(_xla._round_trip(text))
    for _ in range(_MAX_ROUND_TRIPS):
        following = canonicalize_computation_names(_xla._round_trip(current))
        if following == current:
            return current
        current = following
    raise ValueError(f"HLO normalization did not reach a fixpoint in {_MAX_ROUND_TRIPS} round trips")


def parse(text: str) -> Any:
    return _xla.parse(text)


def _count(analysis) -> int:
    return sum(analysis.opcode_counts[i] for i in _COUNTED)


def op_count(text: str) -> int:
    """Instructions over all computations, other than parameter and constant."""
    return _count(_xla.analyze(text))


def default_pipeline(text: str) -> str:
    """XLA's default target-independent result (normalized), as HLO text."""
    with tempfile.TemporaryDirectory(prefix="xla-gym-default-") as d:
        return _xla.default_pipeline(text, d).text


def _client():
    from jax._src import xla_bridge

    return xla_bridge.get_backend("cpu")


def cost_analysis(text: str) -> Dict[str, float]:
    """XLA's HloCostAnalysis totals for the module (per-operand entries dropped)."""
    from jax._src.lib import _jax

    cost = _jax.hlo_module_cost_analysis(_client(), parse(text))
    return {k: float(cost[k]) for k in _COST_KEYS if k in cost}


def parameter_shapes(text: str) -> List[tuple]:
    """``[(shape_tuple, numpy_dtype), ...]`` of the entry computation's parameters."""
    from jax._src.lib import hlo

    comp = hlo.XlaComputation(parse(text).as_serialized_hlo_module_proto())
    return [
        (tuple(s.dimensions()), np.dtype(s.numpy_dtype()))
        for s in comp.program_shape().parameter_shapes()
    ]


def compile(text: str):
    """Compile ``text`` for CPU with default options; returns a loaded executable."""
    from jax._src.lib import _jax, hlo, xla_client

    comp = hlo.XlaComputation(parse(text).as_serialized_hlo_module_proto())
    mlir = _jax.mlir.xla_computation_to_mlir_module(comp)
    client = _client()
    return client.compile_and_load(
        mlir, xla_client.DeviceList(tuple(client.local_devices())), xla_client.CompileOptions()
    )


def execute(executable, inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
    """Run a compiled module on host arrays; returns its outputs as numpy arrays."""
    import jax

    device_inputs = [jax.device_put(np.asarray(x)) for x in inputs]
    return [np.asarray(o) for o in executable.execute(device_inputs)]
