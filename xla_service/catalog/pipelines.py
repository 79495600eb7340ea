"""XLA's CPU pipelines in jaxlib 0.10.2: dump names, skipped backend passes, the default order.

Pure data: ``passes/dumps.py`` reads dumps with these names, ``passes/xla.py``
compiles with them, ``demo.py`` and the default-pipeline agent replay the
default order.
"""
from __future__ import annotations

__all__ = [
    "BACKEND_DISABLED",
    "DUMP_PIPELINE_RE",
    "LAYOUT_PASS",
    "LAYOUT_PIPELINE",
    "AFTER_LAYOUT",
    "LATER_PIPELINES",
    "DEFAULT_PROLOGUE",
    "DEFAULT_SIMPLIFICATION",
    "DEFAULT_EPILOGUE",
    "DEMO_SEQUENCE",
]

#: Target-dependent CPU passes that a step's compile skips. They run after
#: every target-independent pass, so they cannot change what a step reads (the
#: module before ``layout-assignment``), and they lead to the costly and
#: fragile part of the backend: ``fusion`` and ``fusion-wrapper`` hand gathers
#: and scatters that the skipped ``gather_simplifier`` left alone to the fusion
#: emitters, whose indexing analysis then CHECK-fails and aborts the worker;
#: without layouts, the backend rejects most modules at their first dot,
#: before generating any code. Results are unchanged (``benchmarks/check_identical.py``).
BACKEND_DISABLED: tuple[str, ...] = ("layout-assignment", "fusion", "fusion-wrapper")

#: The pipelines whose passes XLA dumps: those before ``layout-assignment``
#: (where a step's pass, or any intruder, leaves its dump) and ``hlo
#: normalization``, the first after it, whose start proves that every
#: target-independent pass ran. Later pipelines would dump the whole module
#: again after every backend pass, for nothing.
DUMP_PIPELINE_RE = (
    "^(async-collective|pre-spmd-partitioner|sharding-removal|SubbytePacker pipeline"
    "|HLO passes through layout assignment|simplification"
    "|post_scatter_expansion_simplification|hlo normalization)$"
)

LAYOUT_PASS = "layout-assignment"
#: The pipeline that holds ``layout-assignment``, as dump file names spell it.
LAYOUT_PIPELINE = "HLO_passes_through_layout_assignment"
#: The passes of that pipeline that run after layout-assignment (and, in it,
#: only there): when a step disables layout-assignment, the first of them to
#: leave a dump marks the end of the target-independent passes.
AFTER_LAYOUT: frozenset[str] = frozenset(
    {LAYOUT_PASS, "sub-byte-size-setter", "shape-canonicalizer", "literal-canonicalizer"}
)
#: Pipelines that start only after every target-independent pass has run.
LATER_PIPELINES: frozenset[str] = frozenset(
    {"hlo_normalization", "dot-library-passes", "HLO_passes_after_layout_assignment"}
)

#: XLA's default CPU pipeline's main target-independent passes, in its order:
#: the passes before its simplification fixpoint, the fixpoint's passes that
#: change bundled modules, and those after it.
DEFAULT_PROLOGUE: tuple[str, ...] = (
    "flatten-call-graph",
    "batched_gather_scatter_normalizer",
    "dot_decomposer",
    "call-inliner",
    "batch-dot-simplification",
)
DEFAULT_SIMPLIFICATION: tuple[str, ...] = (
    "algsimp",
    "dce",
    "gather_simplifier",
    "tuple-simplifier",
    "reshape-mover",
    "constant_folding",
)
DEFAULT_EPILOGUE: tuple[str, ...] = ("transpose-folding", "cse")

#: The demo's sequence: one simplification round, then the passes of a second
#: round that still change the bundled GPT-2 (also the skeleton of the
#: benchmarks' mixed walks, whose digests ``check_identical.py`` records).
DEMO_SEQUENCE: tuple[str, ...] = (
    DEFAULT_PROLOGUE + DEFAULT_SIMPLIFICATION + ("algsimp", "reshape-mover") + DEFAULT_EPILOGUE
)
