"""The fixed layouts of xla-v0's numeric observations (pure Python, no jax).

Shared by the worker that computes the values (``observe.py``), the service
that declares the spaces (``session/spaces.py``) and the client helpers
(``env/graph.py``), so that the three can never disagree. Documented in the
README's "Spaces", "Validation" and "Session parameters" sections.
"""
from __future__ import annotations

__all__ = [
    "OP_COUNT_RULE",
    "COST_KEYS",
    "DTYPES",
    "EDGE_FLOWS",
    "TOLERANCES",
    "DEFAULT_TOLERANCE",
    "INPUT_INT_HIGH",
    "DEFAULT_RUNTIME_REPETITIONS",
    "RUNTIME_WARMUP",
    "RUNTIME_PIPELINES",
    "MAX_RUNTIME_REPETITIONS",
    "NARROW_HLO_FLOATS",
    "GRAPH_NODE_COLUMNS",
    "GRAPH_EDGE_COLUMNS",
    "GRAPH_ARRAYS_MAGIC",
    "tolerance",
]

#: The version of the op count rule, recorded in manifests, results and stored
#: experience so that counts made under different rules are never compared.
#: 1: every computation counted once, however many ``call`` sites share it
#: (until 2026-11-23). 2: the module counted as XLA's own ``flatten-call-graph``
#: and ``call-inliner`` leave it (every call site with its callee's body,
#: normalized), ``parameter`` and ``constant`` left out (README, "Op count").
OP_COUNT_RULE = 2

#: ``CostAnalysis`` vector order, under XLA's own ``HloCostAnalysis`` key names.
COST_KEYS: tuple[str, ...] = ("flops", "transcendentals", "bytes accessed", "optimal_seconds")

#: Element types of ``HloGraph`` nodes, in one-hot order (HLO text names);
#: ``tuple`` and ``token`` for non-array shapes, ``other`` for anything else.
DTYPES: tuple[str, ...] = (
    "pred",
    "s4",
    "s8",
    "s16",
    "s32",
    "s64",
    "u4",
    "u8",
    "u16",
    "u32",
    "u64",
    "f8e4m3fn",
    "f8e5m2",
    "bf16",
    "f16",
    "f32",
    "f64",
    "c64",
    "c128",
    "tuple",
    "token",
    "other",
)

#: ``HloGraph`` edge kinds, in edge-type order: ``operand`` (operand ->
#: user), ``call`` (caller -> parameter of a called computation),
#: ``return`` (root of a called computation -> caller).
EDGE_FLOWS: tuple[str, ...] = ("operand", "call", "return")

#: ``HloGraphArrays``: the graph as two int64 tables (``passes/hlo_graph.pack``,
#: ``env/graph.unpack``), a row per node and per edge, with these columns.
GRAPH_NODE_COLUMNS: tuple[str, ...] = (
    "opcode_index", "dtype_index", "rank", "elements", "entry", "root", "parameter_number", "computation_index",
)
GRAPH_EDGE_COLUMNS: tuple[str, ...] = ("source", "target", "flow_index", "position")
#: First bytes of a packed graph (then the node and edge counts, little-endian int64).
GRAPH_ARRAYS_MAGIC = b"XGA1"

#: Validation tolerances by NumPy dtype name: ``(rtol, atol)``; an element
#: passes when ``|current - original| <= atol + rtol * |original|``.
#: Integers and booleans must be equal.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-12),
    "complex128": (1e-9, 1e-12),
    "float32": (1e-4, 1e-5),
    "complex64": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 2e-2),
}
#: For narrower floating point types (float8 and smaller).
DEFAULT_TOLERANCE: tuple[float, float] = (0.25, 0.25)

#: Seeded inputs of ``Runtime``: floating point uniform in [0, 1), integers
#: uniform in [0, INPUT_INT_HIGH), booleans a fair coin. Validation draws its
#: own (``passes/inputs.py``, ``passes/input_rules.py``), integers whose use it cannot read in
#: [0, INPUT_INT_HIGH).
INPUT_INT_HIGH = 8

DEFAULT_RUNTIME_REPETITIONS = 5
MAX_RUNTIME_REPETITIONS = 1000
#: Executions before the measured ones, not reported.
RUNTIME_WARMUP = 1
#: How ``Runtime`` and ``ExecutableDigest`` compile the module (``xla.runtime.pipeline``):
#: ``full``, XLA's whole CPU pipeline after the agent's passes (what XLA does to
#: any module it is given); ``agent``, the same with ``passes.RUNTIME_OPTIMIZATIONS``
#: disabled, so that the agent's passes are the optimization.
RUNTIME_PIPELINES = ("full", "agent")


#: HLO element types narrower than float32, as NumPy dtype names: a module
#: that computes in one of them is validated at its tolerance (every output,
#: float32 ones included), since a pass may legally change the rounding of
#: its intermediates (``compute_dtype``); outputs that still differ must agree
#: once both modules are widened to float32 (``validation.validate``).
NARROW_HLO_FLOATS: dict[str, str] = {"bf16": "bfloat16", "f16": "float16"}



def tolerance(dtype_name: str, compute_dtype: str = "") -> tuple[float, float]:
    """``(rtol, atol)`` for a floating point or complex dtype name.

    With ``compute_dtype`` (the narrowest float type the module computes in),
    the looser of the two tolerances.
    """
    own = TOLERANCES.get(dtype_name, DEFAULT_TOLERANCE)
    if not compute_dtype:
        return own
    compute = TOLERANCES.get(compute_dtype, DEFAULT_TOLERANCE)
    return max(own[0], compute[0]), max(own[1], compute[1])
