"""A worker process: runs XLA for the engine, one request at a time.

Started as ``python -m xla_service.passes.worker``; requests and replies are
pickled over its stdin and a private copy of its stdout (anything XLA prints
goes to stderr). XLA may abort the process: the engine then replaces it.
"""
from __future__ import annotations

import ctypes
import os
import signal
import time
from multiprocessing.connection import Connection
from typing import Any, Callable, Dict, Optional, Tuple

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
        # Both reply as soon as XLA's dumps hold the result; the CPU backend's
        # remaining work goes on until the worker settles (see main()).
        "run_pass": lambda text, name, dump_dir, mlir=b"": xla.run_pass(
            text, get_pass(name), dump_dir, background=True, mlir=mlir
        ),
        "finish_pass": lambda dump_dir, name, error: xla.finish_pass(
            dump_dir, get_pass(name), error
        ),
        "default_pipeline": lambda text, dump_dir, mlir=b"": xla.default_pipeline(
            text, dump_dir, background=True, mlir=mlir
        ),
        "finish_default": xla.finish_default,
        "crash": lambda: os.abort(),  # for tests of crash recovery
        **_observe_handlers(),
    }


def _observe_handlers() -> Dict[str, Callable[..., Any]]:
    from xla_service.passes import observe  # imports jax: only here, in the worker

    return {
        "cost_analysis": observe.cost_analysis,
        "hlo_graph": observe.hlo_graph,
        "hlo_proto": observe.hlo_proto,
        "runtime": observe.runtime,
        "validate": observe.validate,
    }


def _timed(handler: Callable[..., Any], args: Tuple[Any, ...]) -> Tuple[float, Any, Optional[str]]:
    """``(seconds, result, error)``: a request's time inside this process, without
    the pipes (``benchmarks/bench_floor.py`` measures the floor of a step with it)."""
    start = time.perf_counter()
    try:
        result, error = handler(*args), None
    except XlaGymError as e:
        result, error = None, f"{type(e).__name__}: {e}"
    return time.perf_counter() - start, result, error


def main() -> None:
    """Serve requests until stdin closes.

    Messages: ``("ready", pid)`` once; then per request ``("ok", value,
    settling)`` or ``("error", type name, message, transient, settling)``
    (``transient``: not a property of the request, e.g. dumps that could not
    be written; the engine does not cache it). ``settling``
    says that a compile's backend still runs after the reply: the worker then
    sends ``("settled",)`` when it is done, and only then reads the next
    request, so that an abort in that backend never takes a later request
    with it (``pool.Worker.settle``).
    """
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    requests, replies = Connection(0, writable=False), Connection(reply_fd, readable=False)
    _die_with_parent()
    handlers = _handlers()
    handlers["timed"] = lambda method, *args: _timed(handlers[method], args)
    from xla_service.passes import xla  # imported by _handlers() already

    replies.send(("ready", os.getpid()))
    while True:
        try:
            method, args = requests.recv()
        except (EOFError, OSError):
            break
        reply: Tuple[Any, ...]
        try:
            reply = ("ok", handlers[method](*args))
        except XlaGymError as e:
            reply = ("error", type(e).__name__, str(e), bool(getattr(e, "transient", False)))
        except Exception as e:  # an engine bug: report it, keep serving
            reply = ("error", "XlaGymError", f"{type(e).__name__}: {e}", True)
        settling = xla.background_pending()
        try:
            replies.send(reply + (settling,))
            if settling:
                xla.settle()
                replies.send(("settled",))
        except OSError:  # the engine is gone
            break
    xla.settle()


if __name__ == "__main__":
    main()
