"""The pass engine: real XLA passes on HLO modules, safe from XLA's aborts.

Jax-free: every XLA call runs in a worker process (``pool.py``). States are
immutable :class:`Analysis` values; a step returns a new one or the same one.
Results are cached by (module digest, pass), XLA's deterministic failures
included: XLA passes are deterministic. The cache is shared by every session of
the service and bounded in entries and bytes (least recently used go first).
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import signal
import tempfile
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Optional, Set, Tuple, Type

from xla_service.errors import (
    BenchmarkError,
    ExecutionError,
    HloParseError,
    PassCrashedError,
    PassTimeoutError,
    XlaGymError,
)
from xla_service.passes.analysis import Analysis
from xla_service.passes.catalog import PassSpec, get_pass
from xla_service.passes.memo import Memo
from xla_service.passes.pool import WorkerDied, WorkerPool

__all__ = ["Engine", "MAX_MODULE_BYTES"]

logger = logging.getLogger(__name__)

#: Largest HLO text accepted as a benchmark.
MAX_MODULE_BYTES = 64 * 1024 * 1024

#: Default bound of the result cache: the HLO text it holds, in bytes.
DEFAULT_CACHE_BYTES = 512 * 1024 * 1024

_DEFAULT = "<default pipeline>"
_LOAD = "<load>"


class _Cached:
    """A cache entry: a step's result (None: unchanged) or its deterministic failure."""

    __slots__ = ("result", "error_type", "message", "size")

    def __init__(
        self,
        result: Optional[Analysis],
        error_type: Optional[Type[XlaGymError]] = None,
        message: str = "",
    ) -> None:
        self.result, self.error_type, self.message = result, error_type, message
        held = len(result.text) + len(result.mlir) if result is not None else len(message)
        self.size = 256 + held

    def value(self) -> Optional[Analysis]:
        if self.error_type is not None:
            raise self.error_type(self.message)
        return self.result


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
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self.step_timeout = step_timeout
        self._pool = WorkerPool(workers, log_dir or Path(tempfile.mkdtemp(prefix="xla-gym-")))
        #: (module digest, pass) -> the result (None: unchanged), or the
        #: deterministic XLA failure to raise again.
        self._cache: "OrderedDict[Tuple[str, str], _Cached]" = OrderedDict()
        self._cache_size = cache_size
        self._cache_bytes_limit = cache_bytes
        self.cache_bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        #: Every step's dump directory lives here; see :meth:`_sweep`.
        self._scratch = tempfile.mkdtemp(prefix="xla-gym-dumps-", dir=_scratch_root())
        # Removed by close(), or at exit by an engine that was never closed.
        self._remove_scratch = weakref.finalize(self, shutil.rmtree, self._scratch, True)
        self._active_dumps: Set[str] = set()
        self._swept_at_replaced = 0

    def load(self, text: str) -> Analysis:
        """Parse and normalize a benchmark; errors name the problem."""
        data = text.encode()
        if len(data) > MAX_MODULE_BYTES:
            raise BenchmarkError(
                f"HLO module too large: expected at most {MAX_MODULE_BYTES} bytes, got {len(data)}"
            )

        def load() -> Analysis:
            try:
                return self._call("load", text)
            except WorkerDied as died:
                crashed = PassCrashedError(f"XLA crashed loading the module: {died}")
                crashed.transient = died.exit_code != -signal.SIGABRT  # type: ignore[attr-defined]
                raise crashed from None

        # Every reset of a benchmark loads the same text: normalize it once.
        loaded = self._memo((hashlib.sha256(data).hexdigest(), _LOAD), load)
        assert loaded is not None
        return loaded

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
        self._remove_scratch()

    @property
    def workers_replaced(self) -> int:
        return self._pool.replaced

    def _cached(
        self, state: Analysis, key: str, compute: Callable[[], Optional[Analysis]]
    ) -> Optional[Analysis]:
        """``compute()`` on ``state``, memoized by (digest, key); None if unchanged."""
        return self._memo((state.digest, key), compute, state.digest)

    def _memo(
        self,
        cache_key: Tuple[str, str],
        compute: Callable[[], Optional[Analysis]],
        unchanged_digest: Optional[str] = None,
    ) -> Optional[Analysis]:
        """``compute()``, memoized, deterministic failures included."""
        with self._lock:
            cached = self._cache.get(cache_key)
            if cached is not None:
                self.hits += 1
                self._cache.move_to_end(cache_key)
            else:
                self.misses += 1
        if cached is not None:
            return cached.value()
        try:
            result = compute()
        except (PassCrashedError, HloParseError) as e:  # XLA's verdict on the module
            if isinstance(e, PassTimeoutError) or getattr(e, "transient", False):
                raise
            self._store(cache_key, _Cached(None, type(e), str(e)))
            raise
        if result is not None and result.digest == unchanged_digest:
            result = None
        self._store(cache_key, _Cached(result))
        return result

    def _store(self, key: Tuple[str, str], entry: "_Cached") -> None:
        with self._lock:
            if not self._cache:  # (tests clear it directly)
                self.cache_bytes = 0
            old = self._cache.pop(key, None)
            if old is not None:
                self.cache_bytes -= old.size
            self._cache[key] = entry
            self.cache_bytes += entry.size
            while self._cache and (
                len(self._cache) > self._cache_size or self.cache_bytes > self._cache_bytes_limit
            ):
                self.cache_bytes -= self._cache.popitem(last=False)[1].size

    def _call(self, method: str, *args: object) -> Analysis:
        return self._pool.call(method, *args, timeout=self.step_timeout)

    def _run_pass(self, state: Analysis, spec: PassSpec) -> Optional[Analysis]:
        return self._with_dumps(
            lambda d: self._call("run_pass", state.text, spec.name, d, state.mlir),
            lambda d, why: self._call("finish_pass", d, spec.name, why),
            spec.name,
        )

    def _run_default(self, state: Analysis) -> Optional[Analysis]:
        return self._with_dumps(
            lambda d: self._call("default_pipeline", state.text, d, state.mlir),
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
        dump_dir = tempfile.mkdtemp(prefix="step-", dir=self._scratch)
        with self._lock:
            self._active_dumps.add(dump_dir)
        try:
            try:
                return run(dump_dir)
            except WorkerDied as died:
                logger.warning("XLA aborted a worker running %s: %s", what, died)
                try:
                    return recover(dump_dir, f"XLA aborted: {died}")
                except (PassCrashedError, WorkerDied) as e:
                    crashed = PassCrashedError(
                        f"XLA crashed running {what!r}: {died}. The worker was replaced "
                        "and the session keeps its state."
                    )
                    # Only XLA's own abort (a CHECK failure) is a property of the
                    # module and the pass; a killed worker is not cached.
                    crashed.transient = (  # type: ignore[attr-defined]
                        died.exit_code != -signal.SIGABRT or isinstance(e, WorkerDied)
                    )
                    raise crashed from e
        finally:
            shutil.rmtree(dump_dir, ignore_errors=True)
            with self._lock:
                self._active_dumps.discard(dump_dir)
            self._sweep()

    def _sweep(self) -> None:
        """Remove dump directories that a dead worker left behind.

        A worker replies as soon as the dumps hold its result and finishes the
        compile afterwards, removing the directory (which XLA re-creates when
        it dumps again after the engine removed it). If XLA aborts it then,
        nobody does: after any worker replacement, every directory that no
        step is using goes (a live worker's compile at worst re-creates one,
        and removes it when done).
        """
        replaced = self._pool.replaced
        if replaced == self._swept_at_replaced:
            return
        self._swept_at_replaced = replaced
        with self._lock:
            active = set(self._active_dumps)
        try:
            names = os.listdir(self._scratch)
        except FileNotFoundError:
            return
        for name in names:
            path = os.path.join(self._scratch, name)
            if path not in active:
                shutil.rmtree(path, ignore_errors=True)

    # ------------------------------------------------------------ observations
    # Cost analysis, graph, proto bytes, runtime and validation (worker-side in
    # ``observe.py``). Deterministic results are memoized by module digest.

    def cost_analysis(self, state: Analysis) -> Tuple[float, ...]:
        """XLA's HloCostAnalysis of ``state``, in ``schema.COST_KEYS`` order."""
        return self._memoized(state, "cost_analysis")

    def hlo_graph(self, state: Analysis) -> str:
        """``state`` as node-link JSON (schema in ``hlo_graph.py``)."""
        return self._memoized(state, "hlo_graph")

    def hlo_proto(self, state: Analysis) -> bytes:
        """The serialized HloModuleProto of ``state``."""
        return self._observe("hlo_proto", state.text)

    def runtime(self, state: Analysis, repetitions: int, seed: int) -> list[float]:
        """Seconds per execution of ``state`` (full CPU pipeline), warm-up excluded.

        Raises :class:`ExecutionError` if XLA cannot compile or run it on CPU.
        """
        return self._observe("runtime", state.text, repetitions, seed, execution=True)

    def validate(self, original: Analysis, current: Analysis, seed: int) -> dict[str, object]:
        """Execute both on the same seeded inputs and compare (see ``observe.validate``)."""
        return self._observe("validate", original.text, current.text, seed, execution=True)

    def stats(self) -> dict[str, object]:
        """Cache and worker counters (the ``xla.engine.stats`` session parameter)."""
        memo = self._observation_memo()
        with self._lock:
            return {
                "hits": self.hits,
                "misses": self.misses,
                "cached_results": len(self._cache),
                "cache_bytes": self.cache_bytes,
                "observation_hits": memo.hits,
                "observation_misses": memo.misses,
                "workers": self._pool.size,
                "workers_replaced": self._pool.replaced,
                "step_timeout": self.step_timeout,
            }

    def resize(self, workers: int) -> None:
        """Run ``workers`` worker processes (waits for busy ones to finish)."""
        self._pool.resize(workers)

    def _observation_memo(self) -> Memo:
        with self._lock:
            memo = self.__dict__.get("_observations")
            if memo is None:
                memo = self.__dict__["_observations"] = Memo(128)
            return memo

    def _memoized(self, state: Analysis, method: str) -> Any:
        key = (state.digest, method)
        return self._observation_memo().get(key, lambda: self._observe(method, state.text))

    def _observe(self, method: str, *args: object, execution: bool = False) -> Any:
        """Call a worker; a worker that XLA kills becomes a clear error."""
        try:
            return self._pool.call(method, *args, timeout=self.step_timeout)
        except WorkerDied as died:
            error = ExecutionError if execution else PassCrashedError
            raise error(
                f"XLA crashed computing {method!r}: {died}. The worker was replaced "
                "and the session keeps its state."
            ) from None
