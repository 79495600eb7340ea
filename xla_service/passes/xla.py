"""In-process XLA for the engine's workers: load a module, run one pass by a partial compile.

This module imports jax and may be aborted by XLA (fatal CHECK failures in a
partial pipeline): only worker processes import it (``worker.py``). Parsing
and normalization are in ``hlo.py``, compiles in ``compile.py``, the op count
rule in ``count.py``.
"""
from __future__ import annotations

import os
import re
import zlib

from xla_service.catalog.passes import PassSpec
from xla_service.errors import HloParseError, PassCrashedError
from xla_service.passes.analysis import Analysis
from xla_service.passes.compile import (
    FULL_BACKEND,
    background_pending,
    compile_,
    compile_until_done,
    settle,
)
from xla_service.passes.count import count_opcodes, count_through_xla
from xla_service.passes.dumps import default_pipeline_dump, read_pass_dumps
from xla_service.passes.hlo import normalize, normalized, parse
from xla_service.passes.jaxlib import LARGE_CONSTANTS_FLAG

__all__ = [
    "parse",
    "normalize",
    "analyze",
    "load",
    "run_pass",
    "finish_pass",
    "finish_default",
    "default_pipeline",
    "settle",
    "background_pending",
    "count_through_xla",
    "FULL_BACKEND",
]

_ENTRY = re.compile(r"^\s*ENTRY\s", re.M)
_ELIDED = re.compile(r"\bconstant\(\{\.\.\.\}\)")


def analyze(text: str) -> Analysis:
    """Opcode counts of already-normalized text, under the op count rule."""
    module = parse(text)
    return Analysis(text, count_opcodes(text, module))


def load(text: str) -> Analysis:
    """Parse, normalize and analyze a benchmark's HLO text.

    The text must name its ENTRY computation: without one XLA takes the last
    computation for the entry, so a truncated module would load as another
    program. Nor may it elide a constant's values (``constant({...})``: XLA's
    parser would make them up).
    """
    if text.strip() and not _ENTRY.search(text):
        raise HloParseError(
            "HLO module has no ENTRY computation: expected one, got none "
            "(is the text truncated?)"
        )
    if m := _ELIDED.search(text):
        line = text.count("\n", 0, m.start()) + 1
        raise HloParseError(
            f"HLO module elides a constant's values at line {line} (constant({{...}})): expected every "
            "constant written out (print the module with print_large_constants=True, or dump it with "
            f"XLA_FLAGS={LARGE_CONSTANTS_FLAG})"
        )
    fixpoint, module, mlir = normalized(text)  # no third parse to count opcodes
    return Analysis(
        fixpoint, count_opcodes(fixpoint, module, mlir), mlir=zlib.compress(mlir.encode(), 1)
    )


def finish_pass(
    dump_dir: str, spec: PassSpec, error: str | None = None
) -> Analysis | None:
    """Read a pass's result from its dumps: the new state, or None if unchanged.

    Raises :class:`PassCrashedError` when the compile stopped before the pass
    had provably finished.
    """
    dumps = read_pass_dumps(dump_dir, spec.runs, spec.is_fixpoint)
    if not dumps.completed:
        detail = f": {error.strip().splitlines()[0]}" if error else ""
        crashed = PassCrashedError(f"XLA stopped before pass {spec.name!r} finished{detail}")
        # Without XLA's word, a missing dump says nothing of the pass (a full disk?).
        crashed.transient = not error  # type: ignore[attr-defined]
        raise crashed
    if dumps.result_path is None:
        return None
    with open(dumps.result_path) as f:
        return load(_complete(f.read(), dumps.result_path))


def run_pass(
    text: str, spec: PassSpec, dump_dir: str, background: bool = False, mlir: bytes = b""
) -> Analysis | None:
    """Run one pass alone on normalized ``text``: the new state, or None.

    ``mlir``: ``Analysis.mlir`` of ``text``, if known. With ``background``,
    return before the CPU backend is done with the module (see
    :func:`_compile_until_done`; call :func:`settle` before exiting).
    """
    compiler = compile_until_done if background and not FULL_BACKEND else compile_
    error = compiler(text, spec.disable, dump_dir, mlir)
    return finish_pass(dump_dir, spec, error)


def finish_default(dump_dir: str, error: str | None = None) -> Analysis:
    """Read XLA's default pipeline result from a full compile's dumps."""
    path = default_pipeline_dump(dump_dir)
    if path is None:
        detail = f": {error.strip().splitlines()[0]}" if error else ""
        crashed = PassCrashedError(f"XLA's default pipeline stopped before layout-assignment{detail}")
        crashed.transient = not error  # type: ignore[attr-defined]
        raise crashed
    with open(path) as f:
        return load(_complete(f.read(), path))


def _complete(text: str, path: str) -> str:
    """A dump's text, refused if XLA elided a constant (``jaxlib.LARGE_CONSTANTS_FLAG``)."""
    if _ELIDED.search(text):
        raise PassCrashedError(
            f"XLA wrote a constant as {{...}} in {os.path.basename(path)}: expected every constant in full "
            f"(XLA_FLAGS must hold {LARGE_CONSTANTS_FLAG} before jax starts its backend)"
        )
    return text


def default_pipeline(
    text: str, dump_dir: str, background: bool = False, mlir: bytes = b""
) -> Analysis:
    """XLA's own target-independent result: the module before layout-assignment."""
    compiler = compile_until_done if background and not FULL_BACKEND else compile_
    return finish_default(dump_dir, compiler(text, (), dump_dir, mlir))
