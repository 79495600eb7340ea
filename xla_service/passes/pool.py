"""Long-lived worker processes that run XLA, replaced when XLA kills them."""
from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, List, Optional

from xla_service import errors

__all__ = ["WorkerDied", "Worker", "WorkerPool"]

logger = logging.getLogger(__name__)
_STARTUP_SECONDS = 120.0
#: Longest wait for the backend of a compile whose step has replied (then the
#: worker is replaced): the step timeout, if longer.
_SETTLE_SECONDS = 60.0


class WorkerDied(Exception):
    """The worker process exited mid-request (XLA aborted it, or it was killed)."""

    def __init__(self, message: str, exit_code: Optional[int] = None) -> None:
        super().__init__(message)
        #: The process's exit status: ``-signal.SIGABRT`` when XLA CHECK-failed.
        self.exit_code = exit_code


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
        #: The last reply said that a compile's backend still runs in the worker.
        self.settling = False

    def call(self, method: str, *args: Any, timeout: Optional[float] = None) -> Any:
        """Run ``method`` in the worker; raise what it raised, or WorkerDied."""
        if not self._ready:
            self._expect(_STARTUP_SECONDS)
            self._ready = True
        self.settle(timeout)
        try:
            self._requests.send((method, args))
        except OSError as e:
            raise self._died() from e
        reply = self._expect(timeout)
        self.settling = bool(reply[-1])
        if reply[0] == "ok":
            return reply[1]
        error = getattr(errors, reply[1], errors.XlaGymError)(reply[2])
        setattr(error, "transient", bool(reply[3]))  # noqa: B010  (see worker.main())
        raise error

    def settle(self, timeout: Optional[float] = None) -> None:
        """Wait until the worker has finished the backend of its last compile.

        Raises WorkerDied if XLA aborted it there, before any new request: the
        caller then knows that no request of its own was lost.
        """
        if self.settling:
            self._expect(timeout)  # ("settled",)
            self.settling = False

    def _expect(self, timeout: Optional[float]) -> Any:
        try:
            if not self._replies.poll(timeout):
                self.kill()
                raise errors.PassTimeoutError(
                    f"XLA took longer than {timeout:g} s; its worker was replaced"
                )
            return self._replies.recv()
        except (EOFError, OSError) as e:
            raise self._died() from e

    def _died(self) -> WorkerDied:
        words = self._last_words()
        return WorkerDied(words, self.process.returncode)

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
        # Workers ask Linux to kill them when the *thread* that started them
        # exits (PR_SET_PDEATHSIG): start them all from one long-lived thread.
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="xla-gym-spawner")
        for _ in range(size):
            self._idle.put(self._spawn())

    def _spawn(self) -> Worker:
        worker = self._spawner.submit(Worker, self._log_dir).result()
        with self._lock:
            self._all.append(worker)
        return worker

    def call(self, method: str, *args: Any, timeout: Optional[float] = None) -> Any:
        """Run ``method`` on an idle worker. A worker that dies is replaced."""
        worker = self._ready_worker(timeout)
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

    def _ready_worker(self, timeout: Optional[float]) -> Worker:
        """An idle worker that is alive and has settled its last compile.

        One that died while idle, or in the backend of a compile that had
        already replied, is replaced (its replacement joins the idle queue,
        starting) and the next idle worker is taken: the death costs this
        caller nothing, and no other caller waits for the new one to start.
        """
        settle_timeout = None if timeout is None else max(timeout, _SETTLE_SECONDS)
        while True:
            worker = self._idle.get()
            if worker.process.poll() is None:
                try:
                    worker.settle(settle_timeout)
                    return worker
                except (WorkerDied, errors.PassTimeoutError):
                    pass
            self._idle.put(self._replace(worker))

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
        self._spawner.shutdown(wait=False)

    def resize(self, size: int) -> None:
        """Grow or shrink to ``size`` workers; shrinking waits for idle ones."""
        if size < 1:
            raise ValueError(f"Expected at least 1 worker, got {size}")
        while True:
            with self._lock:
                if self.size == size:
                    return
                growing = self.size < size
                self.size += 1 if growing else -1
            if growing:
                self._idle.put(self._spawn())
                continue
            worker = self._idle.get()
            with self._lock:
                if worker in self._all:
                    self._all.remove(worker)
            worker.close()
