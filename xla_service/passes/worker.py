"""A worker process: runs XLA for the engine, one request at a time.

Started as ``python -m xla_service.passes.worker``; requests and replies are
pickled over its stdin and a private copy of its stdout (anything XLA prints
goes to stderr). XLA may abort the process: the engine then replaces it.
"""
from __future__ import annotations

import ctypes
import os
import signal
from multiprocessing.connection import Connection
from typing import Any, Callable, Dict

from xla_service.errors import XlaGymError

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Ask Linux to kill this process when the service that started it dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: rely on stdin EOF
        pass


def _handlers() -> Dict[str, Callable[..., Any]]:
    from xla_service.passes import xla  # imports jax: only here, in the worker
    from xla_service.passes.catalog import get_pass

    return {
        "load": xla.load,
        "run_pass": lambda text, name, dump_dir: xla.run_pass(text, get_pass(name), dump_dir),
        "finish_pass": lambda dump_dir, name, error: xla.finish_pass(
            dump_dir, get_pass(name), error
        ),
        "default_pipeline": xla.default_pipeline,
        "finish_default": xla.finish_default,
        "crash": lambda: os.abort(),  # for tests of crash recovery
    }


def main() -> None:
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    requests, replies = Connection(0, writable=False), Connection(reply_fd, readable=False)
    _die_with_parent()
    handlers = _handlers()
    replies.send(("ready", os.getpid()))
    while True:
        try:
            method, args = requests.recv()
        except (EOFError, OSError):
            return
        try:
            replies.send(("ok", handlers[method](*args)))
        except XlaGymError as e:
            replies.send(("error", type(e).__name__, str(e)))
        except Exception as e:  # an engine bug: report it, keep serving
            replies.send(("error", "XlaGymError", f"{type(e).__name__}: {e}"))


if __name__ == "__main__":
    main()
