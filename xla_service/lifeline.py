"""The service stops when the client that launched it dies (even by SIGKILL).

CompilerGym's client launches the service as its child and stops it with
SIGTERM on ``env.close()``; a client that is killed never does. ``XlaEnv``
therefore passes its process id in ``XLA_GYM_CLIENT_PID``, and the service
watches that process: once it is gone (the service was re-parented, or the
process no longer exists or is a zombie) the service sends itself SIGTERM,
which shuts it down cleanly, workers included. Services started by hand
(no such variable) are not watched.
"""
from __future__ import annotations

import logging
import os
import signal
import threading

__all__ = ["CLIENT_PID_VARIABLE", "client_alive", "watch_client"]

logger = logging.getLogger(__name__)

CLIENT_PID_VARIABLE = "XLA_GYM_CLIENT_PID"
_POLL_SECONDS = 0.5


def client_alive(pid: int, child_of_client: bool) -> bool:
    """Whether process ``pid`` still runs (a zombie does not)."""
    if child_of_client:
        return os.getppid() == pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def watch_client(variable: str = CLIENT_PID_VARIABLE) -> threading.Thread | None:
    """Start watching the client named by ``$variable``; None if it is unset."""
    value = os.environ.get(variable, "")
    if not value.isdigit():
        return None
    pid = int(value)
    child_of_client = os.getppid() == pid

    def watch() -> None:
        stop = threading.Event()
        while client_alive(pid, child_of_client):
            stop.wait(_POLL_SECONDS)
        logger.warning("Client process %d is gone: shutting down", pid)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="client-watch", daemon=True)
    thread.start()
    return thread
