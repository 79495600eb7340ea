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
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from xla_service import errors
from xla_service.passes.workers import Worker, WorkerDied

__all__ = ["WorkerPool"]

logger = logging.getLogger(__name__)
#: How often a waiting caller looks at busy workers (memory, deadline, settling).
_POLL_SECONDS = 0.25


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
        # Started (jax imported) all at once at the first request: a warm replay needs none.
        self._started = False
        for _ in range(size):
            self._release(self._spawn(start=False))

    def _spawn(self, start: bool = True) -> Worker:
        worker = self._spawner.submit(
            Worker, self._log_dir, self._environment, self.memory_limit, start
        ).result()
        with self._cond:
            self._all.append(worker)
        return worker

    def call(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        """Run ``method`` on an idle worker. A worker that dies is replaced."""
        worker = self._acquire()
        if not self._started:
            self._start_all()
        try:
            return worker.call(method, *args, timeout=timeout)
        except (WorkerDied, errors.PassTimeoutError, errors.ResourceLimitError):
            if worker.process.poll() is not None or worker.killed_because:
                worker = self._replace(worker)
            raise
        finally:
            self._release(worker)

    def _start_all(self) -> None:
        """Tell every worker to start: the first request waits for its own only."""
        with self._cond:
            workers, self._started = list(self._all), True
        for worker in workers:
            try:
                worker.start()
            except WorkerDied:  # found dead, and replaced, when next acquired
                pass

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
        ready = spare.result() if spare is not None else None
        if ready is not None and ready.process.poll() is not None:  # the spare was killed while waiting
            ready.close()
            ready = None
        if ready is None:
            return self._spawn()
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
