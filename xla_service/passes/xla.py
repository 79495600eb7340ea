"""In-process XLA: parse, normalize, count, and run one pass by a partial compile.

This module imports jax and may be aborted by XLA (fatal CHECK failures in a
partial pipeline): only worker processes import it (see ``worker.py``).
See ``shared/design/xla-passes.md`` for the measured facts behind it.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import zlib
from collections.abc import Sequence
from typing import Any

from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.passes import TARGET_INDEPENDENT, PassSpec
from xla_service.catalog.pipelines import BACKEND_DISABLED, DUMP_PIPELINE_RE
from xla_service.errors import HloParseError, PassCrashedError
from xla_service.passes import inline, jaxlib
from xla_service.passes.analysis import Analysis
from xla_service.passes.dumps import (
    default_pipeline_dump,
    read_pass_dumps,
    target_independent_done,
)
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
    "settle",
    "background_pending",
    "BACKEND_DISABLED",
    "FULL_BACKEND",
]

_MAX_ROUND_TRIPS = 4
_ENUM_TO_INDEX = {getattr(jaxlib.hlo.HloOpcode, n): i for i, n in enumerate(jaxlib.hlo.HloOpcode.__members__)}
if len(_ENUM_TO_INDEX) != len(OPCODES):
    raise ImportError(
        f"jaxlib has {len(_ENUM_TO_INDEX)} HLO opcodes, xla_service.catalog.opcodes expects "
        f"{len(OPCODES)}: the opcode table does not match this jaxlib"
    )
_PARSE_POSITION = re.compile(r"was parsing (\d+):(\d+): error: (.*)")

#: ``XLA_GYM_FULL_BACKEND=1``: compile a step with XLA's CPU backend as its
#: defaults have it, and wait for the whole compile, as before the speed-ups
#: (slower, and XLA aborts workers far more often; for tests of the recovery
#: from aborts after a pass, and for debugging). Results are the same.
FULL_BACKEND = os.environ.get("XLA_GYM_FULL_BACKEND", "") not in ("", "0")

#: How often a step looks for the proof that the target-independent passes ran.
_POLL_SECONDS = 0.002
_ENTRY = re.compile(r"^\s*ENTRY\s", re.M)


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


def _to_mlir(module: Any) -> Any:
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
    return canonicalize_computation_names(str(computation.as_hlo_text()))


def _round_trip(text: str) -> str:
    return _from_mlir(_converted(parse(text)))


def _converted(module: Any) -> Any:
    """:func:`_to_mlir`, with XLA's rejection of a module that parses but is not
    consistent (e.g. an ``add`` of f32[4] and f32[5]) as :class:`HloParseError`."""
    try:
        return _to_mlir(module)
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
    return _normalize(text)[0]


def _normalize(text: str) -> tuple[str, Any, str]:
    """:func:`normalize`, with the parsed module and the MLIR of the fixpoint
    (the trip that checked it made both: a compile of it starts from that MLIR)."""
    current = _round_trip(canonicalize_computation_names(text))
    for _ in range(_MAX_ROUND_TRIPS):
        module = parse(current)
        mlir = _converted(module)
        following = _from_mlir(mlir)
        if following == current:
            return current, module, mlir
        current = following
    raise HloParseError(
        f"HLO normalization did not reach a fixpoint in {_MAX_ROUND_TRIPS} round trips"
    )


def _opcode_counts(module: Any) -> tuple[int, ...]:
    counts = [0] * len(OPCODES)
    for computation in module.computations():
        for instruction in computation.instructions():
            counts[_ENUM_TO_INDEX[instruction.opcode]] += 1
    return tuple(counts)


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
    counts = _opcode_counts(module)
    if counts[_CALL] == 0:
        return counts
    if inline.inlinable(text):
        try:
            inlined = parse(inline.inline_calls(text))
            computation = jaxlib.mlir.mlir_module_to_xla_computation(
                _to_mlir(inlined), use_tuple_args=False, return_tuple=False
            )
            return _opcode_counts(
                jaxlib.hlo.HloModule.from_serialized_hlo_module_proto(
                    computation.as_serialized_hlo_module_proto()
                )
            )
        except Exception:  # noqa: BLE001  (XLA's route below is exact: use it)
            pass
    return count_through_xla(text, mlir)


def count_through_xla(text: str, mlir: str = "") -> tuple[int, ...]:
    """:func:`count_opcodes` by running ``COUNT_PASSES``: one partial compile (and
    the reference that ``tests/passes/test_op_count_rule.py`` holds the Python
    inliner to)."""
    dump_dir = tempfile.mkdtemp(prefix="count-", dir=_scratch_root())
    try:
        compile_ = _compile if FULL_BACKEND else _compile_until_done
        error = compile_(text, _COUNT_DISABLE, dump_dir, zlib.compress(mlir.encode(), 1) if mlir else b"")
        dumps = read_pass_dumps(dump_dir, COUNT_PASSES, fixpoint=True)
        if not dumps.completed:
            detail = f": {error.strip().splitlines()[0]}" if error else ""
            raise PassCrashedError(
                f"XLA stopped before {' and '.join(COUNT_PASSES)} finished, which the op "
                f"count needs{detail}"
            )
        if dumps.result_path is None:
            return _opcode_counts(parse(text))
        with open(dumps.result_path) as f:
            inlined = f.read()
    finally:
        if not any(d == dump_dir for _, d in _BACKGROUND):
            shutil.rmtree(dump_dir, ignore_errors=True)
    _, inlined_module, _ = _normalize(inlined)
    return _opcode_counts(inlined_module)


def _scratch_root() -> str:
    """Where count compiles dump: the engine's scratch folder (``$XLA_GYM_SCRATCH``)."""
    folder = os.environ.get("XLA_GYM_SCRATCH", "")
    if folder and os.path.isdir(folder):
        return folder
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else tempfile.gettempdir()


def analyze(text: str) -> Analysis:
    """Opcode counts of already-normalized text, under the op count rule."""
    module = parse(text)
    return Analysis(text, count_opcodes(text, module))


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
    normalized, module, mlir = _normalize(text)  # no third parse to count opcodes
    return Analysis(
        normalized, count_opcodes(normalized, module, mlir), mlir=zlib.compress(mlir.encode(), 1)
    )


def _compile(
    text: str, disable: Sequence[str], dump_dir: str, mlir: bytes = b""
) -> str | None:
    """Compile with dumps on; return XLA's error message, if any."""
    return _compile_mlir(_input_mlir(text, mlir), disable, dump_dir)


def _input_mlir(text: str, mlir: bytes) -> str:
    """What a compile of ``text`` starts from: its MLIR, from ``Analysis.mlir`` if known."""
    return zlib.decompress(mlir).decode() if mlir else _to_mlir(parse(text))


def _compile_mlir(mlir: Any, disable: Sequence[str], dump_dir: str) -> str | None:
    options = jaxlib.xla_client.CompileOptions()
    debug = options.executable_build_options.debug_options
    debug.xla_disable_hlo_passes = ",".join(
        tuple(disable) + (() if FULL_BACKEND else BACKEND_DISABLED)
    )
    debug.xla_dump_to = dump_dir
    debug.xla_dump_hlo_pass_re = ".*"
    debug.xla_dump_hlo_pipeline_re = DUMP_PIPELINE_RE
    debug.xla_dump_hlo_as_text = True
    if not FULL_BACKEND:
        debug.xla_backend_optimization_level = 0
        debug.xla_llvm_disable_expensive_passes = True
    client = jaxlib.cpu_client()
    devices = jaxlib.xla_client.DeviceList(tuple(client.local_devices()))
    try:
        client.compile_and_load(mlir, devices, options)
    except Exception as e:  # the backend often rejects a partial pipeline's module
        return str(e)
    return None


#: Compiles whose backend still runs after their step replied: (thread, dump folder).
_BACKGROUND: list[tuple[threading.Thread, str]] = []


def background_pending() -> bool:
    """Whether a compile left running by :func:`run_pass` awaits :func:`settle`
    (compiles that have ended meanwhile are settled now)."""
    if _BACKGROUND and all(not thread.is_alive() for thread, _ in _BACKGROUND):
        settle()
    return bool(_BACKGROUND)


def settle() -> None:
    """Wait for the backends of the compiles that :func:`run_pass` left running, then
    remove their dump folders (XLA may have re-made one after the engine removed it)."""
    while _BACKGROUND:
        thread, dump_dir = _BACKGROUND.pop()
        thread.join()
        shutil.rmtree(dump_dir, ignore_errors=True)


def _compile_until_done(
    text: str, disable: Sequence[str], dump_dir: str, mlir: bytes = b""
) -> str | None:
    """:func:`_compile`, but return as soon as the dumps prove that every
    target-independent pass ran, which is all a step reads.

    The rest of the compile (the CPU backend, which a partial pipeline's module
    often upsets) goes on in a thread until the next :func:`settle`; if XLA
    aborts the process there, the step has already replied. Several may run
    at once (a step's, then the count of its result: :func:`count_opcodes`).
    """
    module = _input_mlir(text, mlir)  # here, so that parse errors are this step's
    outcome: dict[str, str | None] = {}

    def compile_() -> None:
        try:
            outcome["error"] = _compile_mlir(module, disable, dump_dir)
        except BaseException as e:  # noqa: B036  (reported, never lost in a thread)
            outcome["error"] = f"{type(e).__name__}: {e}"

    thread = threading.Thread(target=compile_, name="xla-compile", daemon=True)
    thread.start()
    while True:
        thread.join(_POLL_SECONDS)
        if not thread.is_alive():
            return outcome.get("error")
        if target_independent_done(dump_dir):
            _BACKGROUND.append((thread, dump_dir))
            return None


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
        return load(f.read())


def run_pass(
    text: str, spec: PassSpec, dump_dir: str, background: bool = False, mlir: bytes = b""
) -> Analysis | None:
    """Run one pass alone on normalized ``text``: the new state, or None.

    ``mlir``: ``Analysis.mlir`` of ``text``, if known. With ``background``,
    return before the CPU backend is done with the module (see
    :func:`_compile_until_done`; call :func:`settle` before exiting).
    """
    compile_ = _compile_until_done if background and not FULL_BACKEND else _compile
    error = compile_(text, spec.disable, dump_dir, mlir)
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
        return load(f.read())


def default_pipeline(
    text: str, dump_dir: str, background: bool = False, mlir: bytes = b""
) -> Analysis:
    """XLA's own target-independent result: the module before layout-assignment."""
    compile_ = _compile_until_done if background and not FULL_BACKEND else _compile
    return finish_default(dump_dir, compile_(text, (), dump_dir, mlir))
