"""The op count rule: a module counted as XLA's flatten-call-graph and call-inliner leave it.

See docs/concepts.md, "The op count", and ``catalog.schema.OP_COUNT_RULE``.
Imports jax: worker processes only.
"""
from __future__ import annotations

import shutil
import tempfile
import zlib
from typing import Any

from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.passes import TARGET_INDEPENDENT
from xla_service.errors import PassCrashedError
from xla_service.passes import inline
from xla_service.passes.compile import (
    BACKGROUND,
    FULL_BACKEND,
    compile_,
    compile_until_done,
    scratch_root,
)
from xla_service.passes.dumps import read_pass_dumps
from xla_service.passes.hlo import module_of, normalized, opcode_counts, parse, to_mlir

__all__ = ["COUNT_PASSES", "count_opcodes", "count_through_xla"]

#: The passes after which a module is counted (``schema.OP_COUNT_RULE``): XLA's
#: own compile starts with them, and they give every call site its own copy
#: of the callee, inlined, so that sharing a callee never lowers the count.
COUNT_PASSES = ("flatten-call-graph", "call-inliner")
_CALL = OPCODES.index("call")
_COUNT_DISABLE = tuple(sorted(TARGET_INDEPENDENT - set(COUNT_PASSES)))


def count_opcodes(text: str, module: Any, mlir: str = "") -> tuple[int, ...]:
    """Opcode counts of normalized ``text`` under the op count rule.

    A module without ``call`` instructions is counted as it is: after
    normalization only ``call`` can share a computation, so flattening and
    inlining change nothing. Otherwise it is counted as XLA's own
    ``flatten-call-graph`` and ``call-inliner`` leave it, normalized: from the
    text inlined in Python and one HLO -> StableHLO -> HLO trip (a fraction of
    a compile), or, for calls that XLA does not inline or text the inliner
    does not understand, by running the two passes.
    """
    counts = opcode_counts(module)
    if counts[_CALL] == 0:
        return counts
    if inline.inlinable(text):
        try:
            return opcode_counts(module_of(to_mlir(parse(inline.inline_calls(text)))))
        except Exception:  # noqa: BLE001  (XLA's route below is exact: use it)
            pass
    return count_through_xla(text, mlir)


def count_through_xla(text: str, mlir: str = "") -> tuple[int, ...]:
    """:func:`count_opcodes` by running ``COUNT_PASSES``: one partial compile (and
    the reference that ``tests/passes/test_op_count_rule.py`` holds the Python
    inliner to)."""
    dump_dir = tempfile.mkdtemp(prefix="count-", dir=scratch_root())
    try:
        compiler = compile_ if FULL_BACKEND else compile_until_done
        error = compiler(text, _COUNT_DISABLE, dump_dir, zlib.compress(mlir.encode(), 1) if mlir else b"")
        dumps = read_pass_dumps(dump_dir, COUNT_PASSES, fixpoint=True)
        if not dumps.completed:
            detail = f": {error.strip().splitlines()[0]}" if error else ""
            raise PassCrashedError(
                f"XLA stopped before {' and '.join(COUNT_PASSES)} finished, which the op "
                f"count needs{detail}"
            )
        if dumps.result_path is None:
            return opcode_counts(parse(text))
        with open(dumps.result_path) as f:
            inlined = f.read()
    finally:
        if not any(d == dump_dir for _, d in BACKGROUND):
            shutil.rmtree(dump_dir, ignore_errors=True)
    _, inlined_module, _ = normalized(inlined)
    return opcode_counts(inlined_module)


