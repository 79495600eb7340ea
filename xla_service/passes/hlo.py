"""HLO text, parsed modules and StableHLO: parsing, normalization, opcode counts (imports jax).

Only worker processes import it. The normalized form of a module is the
fixpoint of HLO -> StableHLO -> HLO with canonical computation names, what
every compile hands its first pass (docs/concepts.md, "The state").
"""
from __future__ import annotations

import re
from typing import Any

from xla_service.catalog.opcodes import OPCODES
from xla_service.errors import HloParseError
from xla_service.passes import jaxlib
from xla_service.passes.names import canonicalize_computation_names

__all__ = ["parse", "normalize", "normalized", "round_trip", "to_mlir", "opcode_counts", "converted_module"]

_MAX_ROUND_TRIPS = 4
_ENUM_TO_INDEX = {getattr(jaxlib.hlo.HloOpcode, n): i for i, n in enumerate(jaxlib.hlo.HloOpcode.__members__)}
if len(_ENUM_TO_INDEX) != len(OPCODES):
    raise ImportError(
        f"jaxlib has {len(_ENUM_TO_INDEX)} HLO opcodes, xla_service.catalog.opcodes expects "
        f"{len(OPCODES)}: the opcode table does not match this jaxlib"
    )
_PARSE_POSITION = re.compile(r"was parsing (\d+):(\d+): error: (.*)")


def parse(text: str) -> Any:
    """Parse HLO text; a syntax error names its line and column."""
    if not text.strip():
        raise HloParseError("Empty HLO module: expected the text of an HloModule, got nothing")
    try:
        return jaxlib.hlo.hlo_module_from_text(text)
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


def to_mlir(module: Any) -> Any:
    computation = jaxlib.hlo.XlaComputation(module.as_serialized_hlo_module_proto())
    return jaxlib.mlir.xla_computation_to_mlir_module(computation)


def _from_mlir(mlir: Any) -> str:
    """StableHLO -> HLO text, names made canonical."""
    try:
        computation = jaxlib.mlir.mlir_module_to_xla_computation(
            mlir, use_tuple_args=False, return_tuple=False
        )
    except Exception as e:  # jaxlib raises JaxRuntimeError: the module is inconsistent
        raise HloParseError(f"XLA rejects this module: {_xla_message(e)}") from None
    return canonicalize_computation_names(str(computation.as_hlo_text(print_large_constants=True)))


def round_trip(text: str) -> str:
    return _from_mlir(converted_module(parse(text)))


def converted_module(module: Any) -> Any:
    """:func:`_to_mlir`, with XLA's rejection of a module that parses but is not
    consistent (e.g. an ``add`` of f32[4] and f32[5]) as :class:`HloParseError`."""
    try:
        return to_mlir(module)
    except Exception as e:  # jaxlib raises JaxRuntimeError
        raise HloParseError(f"XLA rejects this module: {_xla_message(e)}") from None


def _xla_message(error: BaseException) -> str:
    """The first line of XLA's message that says what is wrong."""
    lines = [ln.strip() for ln in str(error).strip().splitlines() if ln.strip()]
    useful = [ln for ln in lines if "error:" in ln] or lines or [type(error).__name__]
    return re.sub(r"^([A-Z_]+: )?(<unknown>:0: )?", "", useful[0])


def normalize(text: str) -> str:
    """The HLO -> StableHLO -> HLO fixpoint of ``text``.

    Every compile makes this round trip first, so the fixpoint is what a pass
    really receives. It is usually reached after one trip, and checked. The
    export renames called computations on every trip (``f.1`` -> ``f.1.1``),
    so names are made canonical before and after each trip.
    """
    return normalized(text)[0]


def normalized(text: str) -> tuple[str, Any, str]:
    """:func:`normalize`, with the parsed module and the MLIR of the fixpoint
    (the trip that checked it made both: a compile of it starts from that MLIR)."""
    current = round_trip(canonicalize_computation_names(text))
    for _ in range(_MAX_ROUND_TRIPS):
        module = parse(current)
        mlir = converted_module(module)
        following = _from_mlir(mlir)
        if following == current:
            return current, module, mlir
        current = following
    raise HloParseError(
        f"HLO normalization did not reach a fixpoint in {_MAX_ROUND_TRIPS} round trips"
    )


def opcode_counts(module: Any) -> tuple[int, ...]:
    counts = [0] * len(OPCODES)
    for computation in module.computations():
        for instruction in computation.instructions():
            counts[_ENUM_TO_INDEX[instruction.opcode]] += 1
    return tuple(counts)




def module_of(mlir: Any) -> Any:
    """The ``HloModule`` that StableHLO ``mlir`` exports to (no text: for counting)."""
    computation = jaxlib.mlir.mlir_module_to_xla_computation(mlir, use_tuple_args=False, return_tuple=False)
    return jaxlib.hlo.HloModule.from_serialized_hlo_module_proto(computation.as_serialized_hlo_module_proto())
