"""Long-lived worker processes that run XLA, replaced when XLA kills them."""
from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, List, Optional

from xla_service import errors

__all__ = ["WorkerDied", "Worker", "WorkerPool"]

logger = logging.getLogger(__name__)
_STARTUP_SECONDS = 120.0


class WorkerDied(Exception):
    """The worker process exited mid-request (XLA aborted it, or it was killed)."""


class Worker:
    """One worker process and its two pipes."""

    def __init__(self, log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(log_dir / f"worker-{os.getpid()}-{id(self):x}.log", "w+b")
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "1"}
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
        self._ready = False

    def call(self, method: str, *args: Any, timeout: Optional[float] = None) -> Any:
        """Run ``method`` in the worker; raise what it raised, or WorkerDied."""
        if not self._ready:
            self._expect(_STARTUP_SECONDS)
            self._ready = True
        try:
            self._requests.send((method, args))
        except OSError as e:
            raise WorkerDied(self._last_words()) from e
        reply = self._expect(timeout)
        if reply[0] == "ok":
            return reply[1]
        error_type = getattr(errors, reply[1], errors.XlaGymError)
        raise error_type(reply[2])

    def _expect(self, timeout: Optional[float]) -> Any:
        try:
            if not self._replies.poll(timeout):
                self.kill()
                raise errors.PassTimeoutError(
                    f"XLA took longer than {timeout:g} s; its worker was replaced"
                )
            return self._replies.recv()
        except (EOFError, OSError) as e:
            raise WorkerDied(self._last_words()) from e

    def _last_words(self) -> str:
        """The worker's fatal message (e.g. XLA's "Check failed: ..."), if any."""
        self.process.wait(timeout=10)
        self._log.seek(0)
        lines = [ln.decode(errors="replace").strip() for ln in self._log.read().splitlines()]
        fatal = [ln for ln in lines if ln.startswith("F") or "Check failed" in ln]
        code = self.process.returncode
        return (fatal[-1] if fatal else "no message") + f" (exit code {code})"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        self._requests.close()  # EOF on its stdin: the worker exits
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        self._replies.close()
        self._log.close()


class WorkerPool:
    """A fixed number of workers, each serving one caller at a time."""

    def __init__(self, size: int, log_dir: Path) -> None:
        if size < 1:
            raise ValueError(f"Expected at least 1 worker, got {size}")
        self.size = size
        self._log_dir = log_dir
        self._idle: "queue.Queue[Worker]" = queue.Queue()
        self._all: List[Worker] = []
        self._lock = threading.Lock()
        self.replaced = 0
        for _ in range(size):
            self._idle.put(self._spawn())

    def _spawn(self) -> Worker:
        worker = Worker(self._log_dir)
        with self._lock:
            self._all.append(worker)
        return worker

    def call(self, method: str, *args: Any, timeout: Optional[float] = None) -> Any:
        """Run ``method`` on an idle worker. A worker that dies is replaced."""
        worker = self._idle.get()
        if worker.process.poll() is not None:  # died while idle (killed)
            worker = self._replace(worker)
        healthy = True
        try:
            return worker.call(method, *args, timeout=timeout)
        except (WorkerDied, errors.PassTimeoutError):
            healthy = False
            raise
        finally:
            if not healthy:
                worker = self._replace(worker)
            self._idle.put(worker)

    def _replace(self, worker: Worker) -> Worker:
        logger.warning("Replacing worker %d", worker.process.pid)
        worker.kill()
        worker.close()
        with self._lock:
            self._all.remove(worker)
            self.replaced += 1
        return self._spawn()

    def close(self) -> None:
        with self._lock:
            workers, self._all = self._all, []
        for worker in workers:
            worker.close()
