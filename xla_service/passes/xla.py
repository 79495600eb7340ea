"""In-process XLA: parse, normalize, count, and run one pass by a partial compile.

This module imports jax and may be aborted by XLA (fatal CHECK failures in a
partial pipeline): only worker processes import it (see ``worker.py``).
See ``shared/design/xla-passes.md`` for the measured facts behind it.
"""
from __future__ import annotations

import re
from typing import Any, Optional, Sequence

from jax._src import xla_bridge
from jax._src.lib import _jax, hlo, xla_client

from xla_service.errors import HloParseError, PassCrashedError
from xla_service.opcodes import OPCODES
from xla_service.passes.analysis import Analysis
from xla_service.passes.catalog import PassSpec
from xla_service.passes.dumps import default_pipeline_dump, read_pass_dumps
from xla_service.passes.names import canonicalize_computation_names

__all__ = [
    "parse",
    "normalize",
    "analyze",
    "load",
    "run_pass",
    "finish_pass",
    "finish_default",
    "default_pipeline",
]

_MAX_ROUND_TRIPS = 4
_ENUM_TO_INDEX = {getattr(hlo.HloOpcode, n): i for i, n in enumerate(hlo.HloOpcode.__members__)}
if len(_ENUM_TO_INDEX) != len(OPCODES):
    raise ImportError(
        f"jaxlib has {len(_ENUM_TO_INDEX)} HLO opcodes, xla_service.opcodes expects "
        f"{len(OPCODES)}: the opcode table does not match this jaxlib"
    )
_PARSE_POSITION = re.compile(r"was parsing (\d+):(\d+): error: (.*)")
_ENTRY = re.compile(r"^\s*ENTRY\s", re.M)


def parse(text: str) -> Any:
    """Parse HLO text; a syntax error names its line and column."""
    if not text.strip():
        raise HloParseError("Empty HLO module: expected the text of an HloModule, got nothing")
    try:
        return hlo.hlo_module_from_text(text)
    except Exception as e:  # jaxlib raises JaxRuntimeError
        message = str(e)
        m = _PARSE_POSITION.search(message)
        if m:
            line, column, what = int(m[1]), int(m[2]), m[3]
            lines = text.splitlines()
            source = lines[line - 1].strip() if 0 < line <= len(lines) else "<end of text>"
            raise HloParseError(
                f"HLO parse error at line {line}, column {column}: {what} "
                f"(line {line}: {source!r})"
            ) from None
        raise HloParseError(f"HLO parse error: {message}") from None


def _to_mlir(module: Any) -> Any:
    computation = hlo.XlaComputation(module.as_serialized_hlo_module_proto())
    return _jax.mlir.xla_computation_to_mlir_module(computation)


def _round_trip(text: str) -> str:
    mlir = _to_mlir(parse(text))
    computation = _jax.mlir.mlir_module_to_xla_computation(
        mlir, use_tuple_args=False, return_tuple=False
    )
    return canonicalize_computation_names(str(computation.as_hlo_text()))


def normalize(text: str) -> str:
    """The HLO -> StableHLO -> HLO fixpoint of ``text``.

    Every compile makes this round trip first, so the fixpoint is what a pass
    really receives. It is usually reached after one trip, and checked. The
    export renames called computations on every trip (``f.1`` -> ``f.1.1``),
    so names are made canonical before and after each trip.
    """
    current = _round_trip(canonicalize_computation_names(text))
    for _ in range(_MAX_ROUND_TRIPS):
        following = _round_trip(current)
        if following == current:
            return current
        current = following
    raise HloParseError(
        f"HLO normalization did not reach a fixpoint in {_MAX_ROUND_TRIPS} round trips"
    )


def analyze(text: str) -> Analysis:
    """Opcode counts of already-normalized text."""
    counts = [0] * len(OPCODES)
    for computation in parse(text).computations():
        for instruction in computation.instructions():
            counts[_ENUM_TO_INDEX[instruction.opcode]] += 1
    return Analysis(text, tuple(counts))


def load(text: str) -> Analysis:
    """Parse, normalize and analyze a benchmark's HLO text.

    The text must name its ENTRY computation: without one XLA takes the last
    computation for the entry, so a truncated module would load as another
    program.
    """
    if text.strip() and not _ENTRY.search(text):
        raise HloParseError(
            "HLO module has no ENTRY computation: expected one, got none "
            "(is the text truncated?)"
        )
    return analyze(normalize(text))


def _compile(text: str, disable: Sequence[str], dump_dir: str) -> Optional[str]:
    """Compile with dumps on; return XLA's error message, if any."""
    options = xla_client.CompileOptions()
    debug = options.executable_build_options.debug_options
    if disable:
        debug.xla_disable_hlo_passes = ",".join(disable)
    debug.xla_dump_to = dump_dir
    debug.xla_dump_hlo_pass_re = ".*"
    debug.xla_dump_hlo_as_text = True
    client = xla_bridge.get_backend("cpu")
    devices = xla_client.DeviceList(tuple(client.local_devices()))
    try:
        client.compile_and_load(_to_mlir(parse(text)), devices, options)
    except Exception as e:  # the backend often rejects a partial pipeline's module
        return str(e)
    return None


def finish_pass(
    dump_dir: str, spec: PassSpec, error: Optional[str] = None
) -> Optional[Analysis]:
    """Read a pass's result from its dumps: the new state, or None if unchanged.

    Raises :class:`PassCrashedError` when the compile stopped before the pass
    had provably finished.
    """
    dumps = read_pass_dumps(dump_dir, spec.runs, spec.is_fixpoint)
    if not dumps.completed:
        detail = f": {error.strip().splitlines()[0]}" if error else ""
        raise PassCrashedError(f"XLA stopped before pass {spec.name!r} finished{detail}")
    if dumps.result_path is None:
        return None
    with open(dumps.result_path) as f:
        return load(f.read())


def run_pass(text: str, spec: PassSpec, dump_dir: str) -> Optional[Analysis]:
    """Run one pass alone on normalized ``text``: the new state, or None."""
    error = _compile(text, spec.disable, dump_dir)
    return finish_pass(dump_dir, spec, error)


def finish_default(dump_dir: str, error: Optional[str] = None) -> Analysis:
    """Read XLA's default pipeline result from a full compile's dumps."""
    path = default_pipeline_dump(dump_dir)
    if path is None:
        detail = f": {error.strip().splitlines()[0]}" if error else ""
        raise PassCrashedError(f"XLA's default pipeline stopped before layout-assignment{detail}")
    with open(path) as f:
        return load(f.read())


def default_pipeline(text: str, dump_dir: str) -> Analysis:
    """XLA's own target-independent result: the module before layout-assignment."""
    return finish_default(dump_dir, _compile(text, (), dump_dir))
