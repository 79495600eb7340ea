"""The pass engine: real XLA passes on HLO modules, safe from XLA's aborts.

Jax-free: every XLA call runs in a worker process (``pool.py``). States are
immutable :class:`Analysis` values; a step returns a new one or the same one.
Results are cached by (module digest, pass): XLA passes are deterministic.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Optional, Tuple

from xla_service.errors import BenchmarkError, PassCrashedError
from xla_service.passes.analysis import Analysis
from xla_service.passes.catalog import PassSpec, get_pass
from xla_service.passes.pool import WorkerDied, WorkerPool

__all__ = ["Engine", "MAX_MODULE_BYTES"]

logger = logging.getLogger(__name__)

#: Largest HLO text accepted as a benchmark.
MAX_MODULE_BYTES = 64 * 1024 * 1024

_DEFAULT = "<default pipeline>"


def _scratch_root() -> str:
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else tempfile.gettempdir()


class Engine:
    """Loads modules and applies passes, through a pool of XLA workers."""

    def __init__(
        self,
        workers: int = 2,
        log_dir: Optional[Path] = None,
        step_timeout: Optional[float] = 300.0,
        cache_size: int = 4096,
    ) -> None:
        self.step_timeout = step_timeout
        self._pool = WorkerPool(workers, log_dir or Path(tempfile.mkdtemp(prefix="xla-gym-")))
        self._cache: "OrderedDict[Tuple[str, str], Optional[Analysis]]" = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def load(self, text: str) -> Analysis:
        """Parse and normalize a benchmark; errors name the problem."""
        size = len(text.encode())
        if size > MAX_MODULE_BYTES:
            raise BenchmarkError(
                f"HLO module too large: expected at most {MAX_MODULE_BYTES} bytes, got {size}"
            )
        try:
            return self._call("load", text)
        except WorkerDied as died:
            raise PassCrashedError(f"XLA crashed loading the module: {died}") from None

    def apply(self, state: Analysis, name: str) -> Analysis:
        """Run the pass ``name`` on ``state``; the same object if it changed nothing."""
        spec = get_pass(name)
        result = self._cached(state, spec.name, lambda: self._run_pass(state, spec))
        return state if result is None else result

    def default_pipeline(self, state: Analysis) -> Analysis:
        """XLA's own target-independent result for ``state``."""
        result = self._cached(state, _DEFAULT, lambda: self._run_default(state))
        return state if result is None else result

    def close(self) -> None:
        self._pool.close()

    @property
    def workers_replaced(self) -> int:
        return self._pool.replaced

    def _cached(
        self, state: Analysis, key: str, compute: Callable[[], Optional[Analysis]]
    ) -> Optional[Analysis]:
        with self._lock:
            if (state.digest, key) in self._cache:
                self.hits += 1
                self._cache.move_to_end((state.digest, key))
                return self._cache[(state.digest, key)]
            self.misses += 1
        result = compute()
        if result is not None and result.digest == state.digest:
            result = None
        with self._lock:
            self._cache[(state.digest, key)] = result
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return result

    def _call(self, method: str, *args: object) -> Analysis:
        return self._pool.call(method, *args, timeout=self.step_timeout)

    def _run_pass(self, state: Analysis, spec: PassSpec) -> Optional[Analysis]:
        return self._with_dumps(
            lambda d: self._call("run_pass", state.text, spec.name, d),
            lambda d, why: self._call("finish_pass", d, spec.name, why),
            spec.name,
        )

    def _run_default(self, state: Analysis) -> Optional[Analysis]:
        return self._with_dumps(
            lambda d: self._call("default_pipeline", state.text, d),
            lambda d, why: self._call("finish_default", d, why),
            _DEFAULT,
        )

    def _with_dumps(
        self,
        run: Callable[[str], Optional[Analysis]],
        recover: Callable[[str, str], Optional[Analysis]],
        what: str,
    ) -> Optional[Analysis]:
        """Run a compile in a scratch dump directory.

        If XLA aborts the worker after the pass has finished (in the backend,
        which a partial pipeline often upsets), the result is read from the
        dumps by another worker; if the pass itself did not finish, the step
        fails with :class:`PassCrashedError`.
        """
        dump_dir = tempfile.mkdtemp(prefix="xla-gym-dump-", dir=_scratch_root())
        try:
            try:
                return run(dump_dir)
            except WorkerDied as died:
                logger.warning("XLA aborted a worker running %s: %s", what, died)
                try:
                    return recover(dump_dir, f"XLA aborted: {died}")
                except (PassCrashedError, WorkerDied) as e:
                    raise PassCrashedError(
                        f"XLA crashed running {what!r}: {died}. The worker was replaced "
                        "and the session keeps its state."
                    ) from e
        finally:
            shutil.rmtree(dump_dir, ignore_errors=True)
