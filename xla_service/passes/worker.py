"""A worker process: runs XLA for the engine, one request at a time.

Started as ``python -m xla_service.passes.worker``; requests and replies are
pickled over its stdin and a private copy of its stdout (anything XLA prints
goes to stderr). XLA may abort the process: the engine then replaces it.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from xla_service import errors
from xla_service.errors import XlaGymError

__all__ = ["main", "TEST_HOOKS"]

_PR_SET_PDEATHSIG = 1
#: Requests that exist for tests only are served when this is set.
TEST_HOOKS = os.environ.get("XLA_GYM_TEST_HOOKS", "") not in ("", "0")
#: What a jaxlib exception that no function translated means, by request: the
#: module's fault for loads, the pass's for steps, else the execution's.
_FAILURE_OF: dict[str, type] = {
    "load": errors.BenchmarkError,
    "generate": errors.BenchmarkError,
    "run_pass": errors.PassCrashedError,
    "finish_pass": errors.PassCrashedError,
    "default_pipeline": errors.PassCrashedError,
    "finish_default": errors.PassCrashedError,
}


def _die_with_parent() -> None:
    """Ask Linux to kill this process when the service that started it dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: rely on stdin EOF
        pass


def _handlers() -> dict[str, Callable[..., Any]]:
    from xla_service.catalog.passes import get_pass
    from xla_service.passes import xla  # imports jax: only here, in the worker

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
        "generate": _generate,
        **_observe_handlers(),
        **(_test_hooks() if TEST_HOOKS else {}),
    }


def _generate(recipe: str, attempt: int, rejected: list[list[Any]]) -> tuple[str, ...]:
    """One draw of a ``generator://`` benchmark (``xla_gym_datasets.generator``, imported
    on first use): ``("ok", hlo_text, metadata_json)`` or ``("rejected", why)``."""
    from xla_gym_datasets.generator.core import worker_generate

    return worker_generate(recipe, attempt, rejected)


def _test_hooks() -> dict[str, Callable[..., Any]]:
    """Requests for tests of crash recovery, preemption and memory limits only
    (``XLA_GYM_TEST_HOOKS=1`` in the service's environment)."""
    from xla_service.passes import compile

    def settle_for(seconds: float) -> None:
        """Reply at once, then stay busy for ``seconds``, like a compile's backend."""
        thread = threading.Thread(target=time.sleep, args=(seconds,), daemon=True)
        thread.start()
        compile.BACKGROUND.append((thread, tempfile.mkdtemp(prefix="test-settle-")))

    def allocate(size: int, seconds: float) -> int:
        """Hold ``size`` bytes (resident) for ``seconds``."""
        block = b"\x01" * size
        time.sleep(seconds)
        return len(block)

    return {"crash": os.abort, "settle_for": settle_for, "allocate": allocate}


def _observe_handlers() -> dict[str, Callable[..., Any]]:
    from xla_service.passes import (  # imports jax: only here, in the worker
        backend,
        hlo_graph,
        observe,
        validation,
    )

    return {
        "backend_cost": backend.backend_cost,
        "executable_cost": backend.executable_cost,  # the same, from the finished executable (benchmarks)
        "cost_analysis": observe.cost_analysis,
        "executable_digest": observe.executable_digest,
        "hlo_graph": observe.hlo_graph,
        "hlo_graph_arrays": lambda text: hlo_graph.pack(json.loads(observe.hlo_graph(text))),
        "hlo_proto": observe.hlo_proto,
        "runtime": observe.runtime,
        "validate": validation.validate,
    }


def _timed(handler: Callable[..., Any], args: tuple[Any, ...]) -> tuple[float, Any, str | None]:
    """``(seconds, result, error)``: a request's time inside this process, without
    the pipes (``benchmarks/bench_floor.py`` measures the floor of a step with it)."""
    start = time.perf_counter()
    try:
        result, error = handler(*args), None
    except XlaGymError as e:
        result, error = None, f"{type(e).__name__}: {e}"
    return time.perf_counter() - start, result, error


def _error_reply(method: str, error: Exception) -> tuple[str, str, bool]:
    """``(error type name, message, transient)`` for a failed request.

    Our own errors keep their type. A jaxlib error nothing translated is the
    module's (or the pass's) doing and deterministic; running out of memory is
    a resource limit; anything else is a bug of the engine (INTERNAL), never
    cached.
    """
    if isinstance(error, XlaGymError):
        return type(error).__name__, str(error), error.transient
    if isinstance(error, MemoryError):
        return (
            "ResourceLimitError",
            f"out of memory in {method!r} (the module, or its inputs, do not fit)",
            True,
        )
    text = " ".join(str(error).split())[:2000] or type(error).__name__
    if type(error).__name__ == "JaxRuntimeError":
        kind = _FAILURE_OF.get(method, errors.ExecutionError)
        return kind.__name__, f"XLA failed in {method!r}: {text}", False
    return "XlaGymError", f"engine error in {method!r}: {type(error).__name__}: {text}", True


def main() -> None:
    """Serve requests until stdin closes.

    Messages: it waits for ``("start", ())``, imports jax and sends
    ``("ready", pid)``; then per request ``("ok", value, settling)`` or ``("error", type name, message, transient, settling)``
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
    try:  # ("start", ()): the engine starts its first workers when it first needs one
        requests.recv()
    except (EOFError, OSError):
        return
    handlers = _handlers()
    handlers["timed"] = lambda method, *args: _timed(handlers[method], args)
    from xla_service.passes import xla  # imported by _handlers() already

    replies.send(("ready", os.getpid()))
    while True:
        try:
            method, args = requests.recv()
        except (EOFError, OSError):
            break
        reply: tuple[Any, ...]
        try:
            reply = ("ok", handlers[method](*args))
        except Exception as e:  # reported, never lost: the worker keeps serving
            reply = ("error", *_error_reply(method, e))
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
