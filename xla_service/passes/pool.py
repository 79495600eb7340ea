"""Long-lived worker processes that run XLA, replaced when XLA kills them.

A worker replies to a step as soon as XLA's dumps hold the result and then
finishes the compile's backend ("settling"). That tail is preemptible: a
caller that finds every idle worker still settling waits at most
``preempt_after`` seconds, then the longest-settling worker is killed and
replaced, so one session's huge module never holds workers that another
session needs; after the first such preemption the pool keeps a started
spare, so the next one costs the waiter no worker start. A worker whose
memory grows past ``memory_limit`` is killed too, and the request it was
serving fails with :class:`ResourceLimitError`.
"""
from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from xla_service import errors

__all__ = ["WorkerDied", "Worker", "WorkerPool", "rss_bytes"]

logger = logging.getLogger(__name__)
_STARTUP_SECONDS = 120.0
#: How often a waiting caller looks at busy workers (memory, deadline, settling).
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
        self._ready = False
        #: Since when the worker finishes a compile whose step has replied (None: idle).
        self.settling_since: float | None = None
        #: Why the pool killed it, if it did (named in the error of its request).
        self.killed_because = ""

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


class WorkerPool:
    """A fixed number of workers, each serving one caller at a time (see the module doc)."""

    def __init__(
        self,
        size: int,
        log_dir: Path,
        environment: dict[str, str] | None = None,
        memory_limit: int | None = None,
        preempt_after: float = 0.5,
    ) -> None:
        if size < 1:
            raise ValueError(f"Expected at least 1 worker, got {size}")
        self.size = size
        self._log_dir = log_dir
        self._environment = dict(environment or {})
        self.memory_limit = memory_limit
        self.preempt_after = preempt_after
        self._idle: list[Worker] = []
        self._all: list[Worker] = []
        self._cond = threading.Condition()
        self._wake = os.pipe()
        os.set_blocking(self._wake[0], False)
        os.set_blocking(self._wake[1], False)  # (left open: an fd number is never reused under a waiter)
        self.replaced = 0
        self.preempted = 0
        #: A started worker kept ready for the next preemption (after the first one).
        self._spare: Future[Worker] | None = None
        # Workers ask Linux to kill them when the *thread* that started them
        # exits (PR_SET_PDEATHSIG): start them all from one long-lived thread.
        self._spawner = ThreadPoolExecutor(1, thread_name_prefix="xla-gym-spawner")
        for _ in range(size):
            self._release(self._spawn())

    def _spawn(self) -> Worker:
        worker = self._spawner.submit(
            Worker, self._log_dir, self._environment, self.memory_limit
        ).result()
        with self._cond:
            self._all.append(worker)
        return worker

    def call(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        """Run ``method`` on an idle worker. A worker that dies is replaced."""
        worker = self._acquire()
        try:
            return worker.call(method, *args, timeout=timeout)
        except (WorkerDied, errors.PassTimeoutError, errors.ResourceLimitError):
            if worker.process.poll() is not None or worker.killed_because:
                worker = self._replace(worker)
            raise
        finally:
            self._release(worker)

    def _release(self, worker: Worker) -> None:
        with self._cond:
            self._idle.append(worker)
            self._cond.notify_all()
            try:
                os.write(self._wake[1], b"x")  # wakes callers waiting for a settling worker
            except BlockingIOError:  # full: they are awake anyway
                pass

    def _acquire(self) -> Worker:
        """An idle worker that is alive and has settled its last compile.

        A worker that died while idle, or exceeded its memory while settling,
        is replaced; when every idle worker is still settling, the caller
        waits ``preempt_after`` seconds at most (woken as soon as one settles),
        then the longest-settling one is killed and replaced: its step has
        replied, so nothing is lost.
        """
        while True:
            victim: Worker | None = None
            with self._cond:
                for worker in list(self._idle):
                    if worker.process.poll() is not None or worker.over_memory():
                        self._idle.remove(worker)
                        victim = worker
                        break
                    if worker.settled_now():
                        self._idle.remove(worker)
                        return worker
                if victim is None:
                    if not self._idle:
                        self._cond.wait()
                        continue
                    oldest = min(self._idle, key=lambda w: w.settling_since or 0.0)
                    wait = self.preempt_after - (time.monotonic() - (oldest.settling_since or 0.0))
                    if wait <= 0:
                        self._idle.remove(oldest)
                        victim = oldest
                        self.preempted += 1
                    else:
                        pipes = [w.reply_fd for w in self._idle]
            if victim is not None:
                logger.info("Replacing worker %d (settling too long, over memory, or gone)", victim.process.pid)
                return self._replace(victim, from_spare=True)
            try:
                select.select(pipes + [self._wake[0]], [], [], min(wait, _POLL_SECONDS))
            except (OSError, ValueError):  # a worker closed meanwhile: look again
                pass
            try:
                os.read(self._wake[0], 4096)
            except BlockingIOError:  # nothing to drain
                pass

    def _replace(self, worker: Worker, from_spare: bool = False) -> Worker:
        logger.warning("Replacing worker %d", worker.process.pid)
        worker.kill("it was replaced")
        worker.close()
        with self._cond:
            if worker in self._all:
                self._all.remove(worker)
            self.replaced += 1
            spare, self._spare = (self._spare, None) if from_spare else (None, self._spare)
            if from_spare:  # keep one ready for the next preemption
                self._spare = self._spawner.submit(Worker, self._log_dir, self._environment, self.memory_limit)
        if spare is None:
            return self._spawn()
        ready = spare.result()
        with self._cond:
            self._all.append(ready)
        return ready

    def workers(self) -> list[Worker]:
        """Every live worker (for diagnostics)."""
        with self._cond:
            return list(self._all)

    def close(self) -> None:
        with self._cond:
            workers, self._all, self._idle = self._all, [], []
            spare, self._spare = self._spare, None
        if spare is not None:
            workers.append(spare.result())
        for worker in workers:
            worker.close()
        self._spawner.shutdown(wait=False)

    def resize(self, size: int) -> None:
        """Grow or shrink to ``size`` workers; shrinking waits for idle ones."""
        if size < 1:
            raise ValueError(f"Expected at least 1 worker, got {size}")
        while True:
            with self._cond:
                if self.size == size:
                    return
                growing = self.size < size
                self.size += 1 if growing else -1
            if growing:
                self._release(self._spawn())
                continue
            worker = self._acquire()
            with self._cond:
                if worker in self._all:
                    self._all.remove(worker)
            worker.close()
