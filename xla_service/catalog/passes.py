"""The action space: XLA's target-independent HLO passes, under XLA's own names.

Every pass that jaxlib 0.10.2's CPU compiler runs before ``layout-assignment``
and that can run alone. A :class:`PassSpec` also says what must be enabled for
the pass to run in its real pipeline context: a pass that stands in XLA's
nested fixpoint pipeline ``simplification`` (algsimp, reshape-mover, ...) runs
only when that pipeline runs too, and then runs alone, to its fixpoint.

The order of :data:`PASSES` is the action index order; it never changes
within a pinned jaxlib. Pure Python: the client imports it without jax.
"""
from __future__ import annotations

from dataclasses import dataclass

from xla_service.errors import UnknownPassError, close_matches

__all__ = [
    "PassSpec",
    "PASSES",
    "PASS_NAMES",
    "EXCLUDED",
    "RUNTIME_OPTIMIZATIONS",
    "TARGET_INDEPENDENT",
    "get_pass",
]

_SIMPLIFICATION = "simplification"


@dataclass(frozen=True)
class PassSpec:
    """One action: an XLA pass and the pipeline passes that host it."""

    name: str
    #: Outer pipeline pass that hosts it, if it stands in a nested pipeline.
    parent: str = ""
    #: The passes it runs, if it is itself a pipeline.
    members: tuple[str, ...] = ()

    @property
    def runs(self) -> tuple[str, ...]:
        """The passes left enabled to run it: itself, its host, its members."""
        return ((self.parent,) if self.parent else ()) + (self.name,) + self.members

    @property
    def is_fixpoint(self) -> bool:
        """Whether it runs inside (or is) a fixpoint pipeline."""
        return bool(self.parent or self.members)

    @property
    def disable(self) -> tuple[str, ...]:
        """The value of ``xla_disable_hlo_passes`` that runs this pass alone."""
        return tuple(sorted(TARGET_INDEPENDENT - set(self.runs)))


#: Passes that stand both at top level and inside ``simplification``.
_SHARED = ("dce", "zero_sized_hlo_elimination")

_TOP_LEVEL = (
    # pre-spmd-partitioner, sharding-removal, SubbytePacker pipeline
    "async-collective-replacer",
    "strip-memory-placement-annotations",
    "flatten-call-graph",
    "sharding-remover",
    "control-dep-rewriter",
    "dce",
    "sub-byte-size-setter",
    # HLO passes through layout assignment
    "batched_gather_scatter_normalizer",
    "result_caster",
    "dot_decomposer",
    "operand_upcaster",
    "rng-expander",
    "rng-bit-generator-expander",
    "zero_sized_hlo_elimination",
    "dynamic-index-splitter",
    "conditional-to-select",
    "map-inline",
    "topk-decomposer",
    "comparison-expander",
    "cholesky_expander",
    "qr_expander",
    "eigh_expander",
    "triangular_solve_expander",
    "all_to_all_decomposer",
    "stochastic_convert_decomposer",
    "call-inliner",
    "batch-dot-simplification",
    "all-reduce-promotion",
    "float-normalization-bf16",
    "convolution-group-converter",
    "batchnorm_expander",
    "logistic-expander",
    "conditional-canonicalizer",
    "dynamic-dimension-simplifier",
    "associative-scan-rewriter",
    "reduce-window-rewriter",
    "reduce-window-resizer",
    "scan_expander",
    "dynamic_padder",
    "convolution-canonicalization",
    "change-op-data-type",
    _SIMPLIFICATION,
)

_IN_SIMPLIFICATION = (
    "algsimp",
    "simplify-sorts",
    "gather_expander",
    "gather_simplifier",
    "tree_reduction_rewriter",
    "while-loop-invariant-code-motion",
    "tuple-simplifier",
    "while-loop-constant-sinking",
    "simplify-while-loops",
    "reshape-mover",
    "constant_folding",
    "simplify-conditional",
    "select_and_scatter_expander",
    "scatter_expander",
    "scatter_simplifier",
)

_AFTER_SIMPLIFICATION = (
    "gemv-rewriter",
    "bitcast_dtypes_expander",
    "topk-rewriter",
    "transpose-folding",
    "cse",
    "cse_barrier_expander",
    "while-loop-trip-count-annotator",
)

_FLOAT_TYPES = (
    "f8e5m2 f8e4m3 f8e4m3fn f8e4m3b11fnuz f8e5m2fnuz f8e4m3fnuz f8e3m4 "
    "s4 u4 f4e2m1fn f8e8m0fnu"
).split()

#: Every pass of the pipelines before ``layout-assignment`` in jaxlib 0.10.2.
#: A step disables all of them but one. (``xla_enable_hlo_passes_only`` is no
#: use: it does not filter the passes inside a nested pipeline, and XLA
#: aborts when it is combined with ``xla_disable_hlo_passes``.) The engine
#: checks every step's dumps, so a pass missing here would be reported.
TARGET_INDEPENDENT = frozenset(
    _TOP_LEVEL
    + _IN_SIMPLIFICATION
    + _AFTER_SIMPLIFICATION
    + tuple(f"float-normalization-{t}" for t in _FLOAT_TYPES)
    + ("post_scatter_expansion_simplification", "shardy-xla")
)

PASSES: tuple[PassSpec, ...] = (
    tuple(
        PassSpec(n, members=_IN_SIMPLIFICATION + _SHARED if n == _SIMPLIFICATION else ())
        for n in _TOP_LEVEL
    )
    + tuple(PassSpec(n, parent=_SIMPLIFICATION) for n in _IN_SIMPLIFICATION)
    + tuple(PassSpec(n) for n in _AFTER_SIMPLIFICATION)
)
PASS_NAMES: tuple[str, ...] = tuple(p.name for p in PASSES)
_BY_NAME: dict[str, PassSpec] = {p.name: p for p in PASSES}

#: The optimizing passes among the actions: the passes XLA's CPU backend does
#: without (the others legalize: expanders, decomposers, normalizers, the gather
#: and scatter simplifiers, call-graph flattening). With the session parameter
#: ``xla.runtime.pipeline=agent`` they are disabled, in every pipeline, when a
#: module is compiled for ``Runtime`` and ``ExecutableDigest``: the agent's
#: pass order is then the target-independent optimization, not XLA's default
#: pipeline run again after it.
RUNTIME_OPTIMIZATIONS: tuple[str, ...] = (
    "algsimp", "cse", "dce", "reshape-mover", "constant_folding", "transpose-folding", "tuple-simplifier",
    "simplify-sorts", "while-loop-invariant-code-motion", "while-loop-constant-sinking", "simplify-while-loops",
    "simplify-conditional", "batch-dot-simplification", "conditional-to-select", "tree_reduction_rewriter",
    "dynamic-dimension-simplifier", "call-inliner",
)

#: Passes of the CPU pipeline left out of the action space, with the reason.
EXCLUDED: dict[str, str] = {
    **{
        f"float-normalization-{t}": (
            "one instance of the float-normalization pass per narrow float type; "
            "float-normalization-bf16 stands for them, and no benchmark holds "
            f"{t} values"
        )
        for t in _FLOAT_TYPES
    },
    "post_scatter_expansion_simplification": (
        "a second copy of the simplification pipeline nested in it; its passes "
        "are already actions"
    ),
    "layout-assignment": "target-dependent: assigns CPU memory layouts",
}


def get_pass(name: str) -> PassSpec:
    """The pass called ``name``; raises :class:`UnknownPassError` otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        reason = EXCLUDED.get(name)
        if reason:
            raise UnknownPassError(
                f"Pass {name!r} is not an action: {reason}"
            ) from None
        raise UnknownPassError(
            f"Unknown pass {name!r}: expected one of the {len(PASSES)} XLA pass "
            f"names in xla_service.catalog.passes.PASS_NAMES.{close_matches(name, PASS_NAMES)}"
        ) from None
