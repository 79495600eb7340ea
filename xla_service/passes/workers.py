"""One worker process that runs XLA for the engine, and how it died when it dies.

``Worker`` talks to ``python -m xla_service.passes.worker`` over two pipes,
waits for its replies while watching its memory and the deadline, and tells a
killed worker from XLA's abort (``WorkerDied``). The process imports jax only
once told to start (at once, or with ``start=False`` at its first request):
a service whose steps all come from the experience store never spends
seconds of CPU starting XLA.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from xla_service import errors

__all__ = ["WorkerDied", "Worker", "rss_bytes"]

_STARTUP_SECONDS = 120.0
#: How often a waiting caller looks at a busy worker (memory, deadline).
_POLL_SECONDS = 0.25
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (0 if unknown)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


class WorkerDied(Exception):
    """The worker process exited mid-request (XLA aborted it, or it was killed)."""

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        #: The process's exit status: ``-signal.SIGABRT`` when XLA CHECK-failed.
        self.exit_code = exit_code

    @property
    def xla_aborted(self) -> bool:
        """XLA's own abort (a CHECK failure): a property of the module and the pass."""
        return self.exit_code == -signal.SIGABRT


class Worker:
    """One worker process and its two pipes."""

    def __init__(
        self,
        log_dir: Path,
        environment: dict[str, str] | None = None,
        memory_limit: int | None = None,
        start: bool = True,
    ) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(log_dir / f"worker-{os.getpid()}-{id(self):x}.log", "w+b")
        env = {
            **os.environ,
            "JAX_PLATFORMS": "cpu",
            "TF_CPP_MIN_LOG_LEVEL": "1",
            **(environment or {}),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "xla_service.passes.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
        )
        assert self.process.stdin and self.process.stdout
        self._requests = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self._replies = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        self.memory_limit = memory_limit
        self._started = False
        self._start_lock = threading.Lock()  # the pool may start it while its caller does
        self._ready = False
        #: Since when the worker finishes a compile whose step has replied (None: idle).
        self.settling_since: float | None = None
        #: Why the pool killed it, if it did (named in the error of its request).
        self.killed_because = ""
        if start:
            self.start()

    def start(self) -> None:
        """Tell the process to import jax and get ready (it waits for this); once."""
        with self._start_lock:
            if self._started:
                return
            try:
                self._requests.send(("start", ()))
            except OSError as e:
                raise self._died() from e
            self._started = True

    @property
    def settling(self) -> bool:
        return self.settling_since is not None

    @property
    def reply_fd(self) -> int:
        """The pipe its replies (and "settled") arrive on, for ``select``."""
        return self._replies.fileno()

    def call(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        """Run ``method`` in the worker; raise what it raised, or WorkerDied."""
        if not self._ready:
            self.start()
            self._expect(_STARTUP_SECONDS)
            self._ready = True
        self.settle(timeout)
        try:
            self._requests.send((method, args))
        except OSError as e:
            raise self._died() from e
        reply = self._expect(timeout)
        self.settling_since = time.monotonic() if reply[-1] else None
        if reply[0] == "ok":
            return reply[1]
        error_type = getattr(errors, reply[1], errors.XlaGymError)
        raise error_type(reply[2], transient=bool(reply[3]))

    def settle(self, timeout: float | None = None) -> None:
        """Wait until the worker has finished the backend of its last compile.

        Raises WorkerDied if XLA aborted it there, before any new request: the
        caller then knows that no request of its own was lost.
        """
        if self.settling:
            self._expect(timeout)  # ("settled",)
            self.settling_since = None

    def settled_now(self) -> bool:
        """Whether the worker is idle for real, without waiting (reads its "settled")."""
        if not self.settling:
            return True
        try:
            if self._replies.poll(0):
                self._replies.recv()
                self.settling_since = None
                return True
        except (EOFError, OSError):
            pass
        return False

    def over_memory(self) -> bool:
        return bool(self.memory_limit) and rss_bytes(self.process.pid) > (self.memory_limit or 0)

    def _expect(self, timeout: float | None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                wait = _POLL_SECONDS if deadline is None else min(_POLL_SECONDS, deadline - time.monotonic())
                if self._replies.poll(max(wait, 0.0)):
                    return self._replies.recv()
                if self.over_memory():
                    self.kill(f"it used more than its memory limit of {self.memory_limit} bytes")
                    raise errors.ResourceLimitError(
                        f"XLA needed more than the worker memory limit of "
                        f"{(self.memory_limit or 0) / 2**30:.1f} GiB (XLA_GYM_WORKER_MEMORY) "
                        "on this module; the worker was replaced",
                        transient=True,
                    )
                if deadline is not None and time.monotonic() >= deadline:
                    self.kill(f"it took longer than {timeout:g} s")
                    raise errors.PassTimeoutError(
                        f"XLA took longer than {timeout:g} s (xla.step_timeout); its worker was replaced"
                    )
        except (EOFError, OSError) as e:
            raise self._died() from e

    def _died(self) -> WorkerDied:
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill("it stopped answering")
        return WorkerDied(self._last_words(), self.process.returncode)

    def _last_words(self) -> str:
        """Why the worker died: XLA's fatal message, the signal that killed it, or its exit status."""
        code = self.process.returncode
        if self.killed_because:
            return f"the worker was stopped because {self.killed_because}"
        self._log.seek(0)
        lines = [ln.decode(errors="replace").strip() for ln in self._log.read().splitlines()]
        fatal = [ln for ln in lines if ln.startswith("F") or "Check failed" in ln]
        if code == -signal.SIGABRT:
            return f"XLA aborted: {fatal[-1] if fatal else 'no message'}"
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            return (
                f"the worker was killed by {name} (from outside the service, or by the system "
                "when memory ran out)"
            )
        return f"the worker exited with status {code}" + (f": {fatal[-1]}" if fatal else "")

    def kill(self, because: str = "") -> None:
        if self.process.poll() is None:
            self.killed_because = self.killed_because or because
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        self._requests.close()  # EOF on its stdin: the worker exits
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill("it did not exit when closed")
        self._replies.close()
        self._log.close()
