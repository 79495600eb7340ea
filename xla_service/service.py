"""The ``xla-gym-service`` executable: CompilerGym's client launches it.

Wires the XLA session into the gRPC runtime. Flags are the runtime's
(``xla-gym-service --help``); the engine is configured from the environment:
``XLA_GYM_WORKERS`` (default: one per core, at most 4),
``XLA_GYM_STEP_TIMEOUT`` (seconds, default 300), ``XLA_GYM_WORKER_MEMORY``
(bytes a worker may use, e.g. ``8G``; default 3/4 of the memory over the
workers), ``XLA_GYM_MAX_INSTRUCTIONS`` (largest benchmark admitted,
default 1,000,000 instructions) and ``XLA_GYM_STORE`` (the persistent
experience store: a path, ``default`` or ``off``; ``xla_service/store``).
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from xla_service.lifeline import watch_client
from xla_service.passes.engine import MAX_INSTRUCTIONS, Engine
from xla_service.passes.scratch import clean_stale_scratch
from xla_service.runtime.server import serve
from xla_service.session.xla_session import XlaSession, close_engine, configure_engine
from xla_service.store import SqlStore, open_store

__all__ = ["main"]


def _engine_from_environment(log_dir: Path) -> Engine:
    workers = int(os.environ.get("XLA_GYM_WORKERS", min(4, os.cpu_count() or 1)))
    timeout = float(os.environ.get("XLA_GYM_STEP_TIMEOUT", 300))
    memory = _bytes(os.environ.get("XLA_GYM_WORKER_MEMORY", ""))
    instructions = int(os.environ.get("XLA_GYM_MAX_INSTRUCTIONS", MAX_INSTRUCTIONS))
    return Engine(
        workers=workers,
        log_dir=log_dir,
        step_timeout=timeout,
        worker_memory=memory or None,
        max_instructions=instructions,
        backing=_store(),
    )


def _store() -> SqlStore | None:
    """The experience store of ``$XLA_GYM_STORE``; none (with a warning) if it cannot open."""
    try:
        return open_store()
    except Exception as e:  # noqa: BLE001  (an unreachable server, a file that is not a database...)
        logging.getLogger(__name__).warning("Experience store unavailable, running without: %s", e)
        return None


def _bytes(text: str) -> int:
    """``"8G"``, ``"512M"`` or a number of bytes; 0 for ""."""
    text = text.strip().upper()
    if not text:
        return 0
    scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(text[-1], 1)
    try:
        return int(float(text.rstrip("KMGTB") if scale > 1 else text) * scale)
    except ValueError:
        raise SystemExit(f"XLA_GYM_WORKER_MEMORY: expected bytes such as 8G or 512M, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    working_dir = next(
        (a.split("=", 1)[1] for a in args if a.startswith("--working_dir=")), None
    )
    log_dir = Path(working_dir or "/tmp") / "logs" / "workers"
    configure_engine(lambda: _engine_from_environment(log_dir))
    clean_stale_scratch()  # the dump folders of services killed outright
    watch_client()  # stop when the client that launched us dies
    try:
        return serve(XlaSession, args, on_shutdown=close_engine)
    finally:
        close_engine()


if __name__ == "__main__":
    sys.exit(main())
