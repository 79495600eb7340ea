"""One partial compile, with XLA's pass dumps on (imports jax; worker processes only).

A compile may return as soon as the dumps prove that every target-independent
pass ran (:func:`compile_until_done`); the rest of it (the CPU backend, whose
verdict a step ignores) goes on in a thread until :func:`settle`.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import zlib
from collections.abc import Sequence
from typing import Any

from xla_service.catalog.pipelines import BACKEND_DISABLED, DUMP_PIPELINE_RE
from xla_service.passes import jaxlib
from xla_service.passes.dumps import target_independent_done
from xla_service.passes.hlo import parse, to_mlir

__all__ = ["FULL_BACKEND", "compile_", "compile_until_done", "settle", "background_pending", "scratch_root", "BACKGROUND"]

#: ``XLA_GYM_FULL_BACKEND=1``: compile a step with XLA's CPU backend as its
#: defaults have it, and wait for the whole compile, as before the speed-ups
#: (slower, and XLA aborts workers far more often; for tests of the recovery
#: from aborts after a pass, and for debugging). Results are the same.
FULL_BACKEND = os.environ.get("XLA_GYM_FULL_BACKEND", "") not in ("", "0")

#: How often a step looks for the proof that the target-independent passes ran.
_POLL_SECONDS = 0.002


def scratch_root() -> str:
    """Where count compiles dump: the engine's scratch folder (``$XLA_GYM_SCRATCH``)."""
    folder = os.environ.get("XLA_GYM_SCRATCH", "")
    if folder and os.path.isdir(folder):
        return folder
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else tempfile.gettempdir()


def compile_(
    text: str, disable: Sequence[str], dump_dir: str, mlir: bytes = b""
) -> str | None:
    """Compile with dumps on; return XLA's error message, if any."""
    return _compile_mlir(_input_mlir(text, mlir), disable, dump_dir)


def _input_mlir(text: str, mlir: bytes) -> str:
    """What a compile of ``text`` starts from: its MLIR, from ``Analysis.mlir`` if known."""
    return zlib.decompress(mlir).decode() if mlir else to_mlir(parse(text))


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
BACKGROUND: list[tuple[threading.Thread, str]] = []


def background_pending() -> bool:
    """Whether a compile left running by :func:`run_pass` awaits :func:`settle`
    (compiles that have ended meanwhile are settled now)."""
    if BACKGROUND and all(not thread.is_alive() for thread, _ in BACKGROUND):
        settle()
    return bool(BACKGROUND)


def settle() -> None:
    """Wait for the backends of the compiles that :func:`run_pass` left running, then
    remove their dump folders (XLA may have re-made one after the engine removed it)."""
    while BACKGROUND:
        thread, dump_dir = BACKGROUND.pop()
        thread.join()
        shutil.rmtree(dump_dir, ignore_errors=True)


def compile_until_done(
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
            BACKGROUND.append((thread, dump_dir))
            return None


