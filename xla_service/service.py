"""The ``xla-gym-service`` executable: CompilerGym's client launches it.

Wires the XLA session into the gRPC runtime. Flags are the runtime's
(``xla-gym-service --help``); the engine is configured from the environment:
``XLA_GYM_WORKERS`` (default: one per core, at most 4) and
``XLA_GYM_STEP_TIMEOUT`` (seconds, default 300).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from xla_service.lifeline import watch_client
from xla_service.passes.engine import Engine
from xla_service.runtime.server import serve
from xla_service.session.xla_session import XlaSession, close_engine, configure_engine

__all__ = ["main"]


def _engine_from_environment(log_dir: Path) -> Engine:
    workers = int(os.environ.get("XLA_GYM_WORKERS", min(4, os.cpu_count() or 1)))
    timeout = float(os.environ.get("XLA_GYM_STEP_TIMEOUT", 300))
    return Engine(workers=workers, log_dir=log_dir, step_timeout=timeout)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    working_dir = next(
        (a.split("=", 1)[1] for a in args if a.startswith("--working_dir=")), None
    )
    log_dir = Path(working_dir or "/tmp") / "logs" / "workers"
    configure_engine(lambda: _engine_from_environment(log_dir))
    watch_client()  # stop when the client that launched us dies
    try:
        return serve(XlaSession, args)
    finally:
        close_engine()


if __name__ == "__main__":
    sys.exit(main())
