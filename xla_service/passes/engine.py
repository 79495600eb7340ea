"""The pass engine: real XLA passes on HLO modules, safe from XLA's aborts.

Jax-free: every XLA call runs in a worker process (``pool.py``). States are
immutable :class:`Analysis` values; a step returns a new one or the same one.
Deterministic results (loads, steps, XLA's default pipeline, cost analysis,
graphs, protos, executable digests) go through one :class:`~xla_service.passes.cache.Cache`,
XLA's deterministic failures included; the persistent experience store can
sit behind it. The engine is shared by every session of the service.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import platform
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xla_service.catalog.backend import BACKEND_SEMANTICS_VERSION
from xla_service.catalog.generator import MAX_ATTEMPTS
from xla_service.catalog.passes import PASS_NAMES, get_pass
from xla_service.catalog.schema import RUNTIME_PIPELINES
from xla_service.errors import (
    BenchmarkError,
    ExecutionError,
    PassCrashedError,
    ResourceLimitError,
)
from xla_service.passes.analysis import Analysis
from xla_service.passes.cache import MISS, Backing, Cache, Failure
from xla_service.passes.pool import WorkerPool
from xla_service.passes.scratch import Scratch
from xla_service.passes.workers import WorkerDied

__all__ = [
    "Engine",
    "MAX_MODULE_BYTES",
    "MAX_INSTRUCTIONS",
    "DETERMINISTIC_OBSERVATIONS",
    "default_worker_memory",
    "host_key",
]

logger = logging.getLogger(__name__)

#: Largest HLO text accepted as a benchmark.
MAX_MODULE_BYTES = 64 * 1024 * 1024
#: Most instructions accepted in a benchmark (``$XLA_GYM_MAX_INSTRUCTIONS``).
MAX_INSTRUCTIONS = 1_000_000
#: Default bound of the in-memory cache: the text it holds, in bytes.
DEFAULT_CACHE_BYTES = 512 * 1024 * 1024
#: Worker-side observations whose value depends only on the module text.
DETERMINISTIC_OBSERVATIONS = ("cost_analysis", "hlo_graph", "hlo_graph_arrays", "hlo_proto")

_DEFAULT = "<default pipeline>"
_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?[\w.\-]+\s*=", re.M)


@functools.cache
def host_key() -> str:
    """What XLA's CPU backend compiles for besides the module and jaxlib: the
    architecture and the CPU's feature flags (``/proc/cpuinfo``), hashed. Keys
    the cached executable digests, which a store shared by unlike machines
    must not mix."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith(("flags", "Features"))), "")
    except OSError:
        flags = ""
    return f"{platform.machine()}-{hashlib.sha256(flags.encode()).hexdigest()[:12]}"


def default_worker_memory(workers: int) -> int:
    """The memory limit of one worker: 3/4 of the machine's memory over the workers."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 16 * 2**30
    return max(int(total * 0.75 / max(workers, 1)), 2**30)


class Engine:
    """Loads modules and applies passes, through a pool of XLA workers."""

    def __init__(
        self,
        workers: int = 2,
        log_dir: Path | None = None,
        step_timeout: float | None = 300.0,
        cache_size: int = 8192,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        backing: Backing | None = None,
        worker_memory: int | None = None,
        max_instructions: int = MAX_INSTRUCTIONS,
        preempt_after: float = 0.5,
    ) -> None:
        """``preempt_after``: seconds a caller waits for a worker finishing its last
        compile's tail before that worker is replaced (``pool.py``); a batch job that
        keeps every worker busy does better waiting (replacing costs a worker start)."""
        self.step_timeout = step_timeout
        self.max_instructions = max_instructions
        #: Every step's dump folder lives here.
        self._scratch = Scratch()
        self._pool = WorkerPool(
            workers,
            log_dir or Path(tempfile.mkdtemp(prefix="xla-gym-")),
            {"XLA_GYM_SCRATCH": self._scratch.path},
            memory_limit=worker_memory or default_worker_memory(workers),
            preempt_after=preempt_after,
        )
        self.cache = Cache(cache_size, cache_bytes, backing)

    # ------------------------------------------------------------------ states

    def load(self, text: str) -> Analysis:
        """Parse and normalize a benchmark; errors name the problem."""
        data = text.encode()
        if len(data) > MAX_MODULE_BYTES:
            raise ResourceLimitError(
                f"HLO module too large: expected at most {MAX_MODULE_BYTES} bytes, got {len(data)}"
            )
        instructions = len(_INSTRUCTION.findall(text))
        if instructions > self.max_instructions:
            raise ResourceLimitError(
                f"HLO module too large: expected at most {self.max_instructions} instructions "
                f"(XLA_GYM_MAX_INSTRUCTIONS), got {instructions}"
            )
        key = ("load", hashlib.sha256(data).hexdigest(), "")
        return self.cache.get_or_compute(key, lambda: self._call("load", text, what="loading the module"))

    def generate(self, recipe: str) -> tuple[str, str]:
        """``(hlo_text, metadata_json)`` of a ``generator://`` benchmark's recipe
        (``catalog/generator.py``), made in a worker the first time, then cached
        (and stored) like any result. Draws are tried one request at a time, so
        that an XLA abort costs only that draw (it is recorded, the next one is
        tried); a seed without a valid draw is a :class:`BenchmarkError`."""

        def compute() -> tuple[str, str]:
            rejected: list[list[object]] = []
            for attempt in range(MAX_ATTEMPTS):
                try:
                    reply = self._pool.call("generate", recipe, attempt, rejected, timeout=self.step_timeout)
                except WorkerDied as died:
                    if not died.xla_aborted:
                        raise BenchmarkError(
                            f"A worker died generating {recipe!r}: {died}", transient=True
                        ) from None
                    reply = ("rejected", f"XLA aborted: {died}")
                if reply[0] == "ok":
                    return str(reply[1]), str(reply[2])
                rejected.append([attempt, str(reply[1])])
            reasons = "; ".join(f"draw {i}: {why}" for i, why in rejected)
            raise BenchmarkError(f"No valid program for {recipe!r} in {MAX_ATTEMPTS} draws ({reasons})")

        key = ("generate", hashlib.sha256(recipe.encode()).hexdigest(), "")
        text, metadata = self.cache.get_or_compute(key, compute)
        return text, metadata

    def apply(self, state: Analysis, name: str) -> Analysis:
        """Run the pass ``name`` on ``state``; the same object if it changed nothing."""
        spec = get_pass(name)
        result = self.cache.get_or_compute(
            ("step", state.digest, spec.name),
            lambda: self._unchanged_as_none(state, self._with_dumps(
                lambda d: self._call("run_pass", state.text, spec.name, d, state.mlir),
                lambda d, why: self._call("finish_pass", d, spec.name, why),
                spec.name,
            )),
        )
        return state if result is None else result

    def default_pipeline(self, state: Analysis) -> Analysis:
        """XLA's own target-independent result for ``state``."""
        result = self.cache.get_or_compute(
            ("step", state.digest, _DEFAULT),
            lambda: self._unchanged_as_none(state, self._with_dumps(
                lambda d: self._call("default_pipeline", state.text, d, state.mlir),
                lambda d, why: self._call("finish_default", d, why),
                _DEFAULT,
            )),
        )
        return state if result is None else result

    def pass_outcomes(self, state: Analysis) -> dict[str, str]:
        """What each pass is known (cached or stored) to do to ``state``: ``changed``,
        ``unchanged`` or ``failed``; passes never run on it are absent."""
        stored = getattr(self.cache.backing, "outcomes", None)
        outcomes: dict[str, str] = dict(stored(state.digest)) if stored is not None else {}
        for name in PASS_NAMES:
            value = self.cache.peek(("step", state.digest, name))
            if value is not MISS:
                outcomes[name] = (
                    "failed" if isinstance(value, Failure) else "unchanged" if value is None else "changed"
                )
        return outcomes

    @staticmethod
    def _unchanged_as_none(state: Analysis, result: Analysis | None) -> Analysis | None:
        return None if result is None or result.digest == state.digest else result

    # ------------------------------------------------------------ observations

    def observe(self, name: str, state: Analysis) -> Any:
        """A worker-side observation of ``state`` (``observe.py``), cached when deterministic."""
        if name not in DETERMINISTIC_OBSERVATIONS:
            raise ValueError(f"Expected one of {DETERMINISTIC_OBSERVATIONS}, got {name!r}")
        return self.cache.get_or_compute(
            ("observation", state.digest, name),
            lambda: self._call(name, state.text, what=f"computing {name!r}"),
        )

    def cost_analysis(self, state: Analysis) -> tuple:
        """XLA's HloCostAnalysis of ``state``, in ``schema.COST_KEYS`` order."""
        return tuple(self.observe("cost_analysis", state))

    def hlo_graph(self, state: Analysis) -> str:
        """``state`` as node-link JSON (schema in ``hlo_graph.py``)."""
        return str(self.observe("hlo_graph", state))

    def hlo_proto(self, state: Analysis) -> bytes:
        """The serialized HloModuleProto of ``state``."""
        return bytes(self.observe("hlo_proto", state))

    def executable_digest(self, state: Analysis, pipeline: str = "full") -> str:
        """sha256 of the optimized HLO XLA's CPU pipeline (``schema.RUNTIME_PIPELINES``)
        makes of ``state`` (``observe.executable_digest``): equal digests, the same
        executable. Cached per :func:`host_key`: the CPU backend's passes depend on the CPU.

        Raises :class:`ExecutionError` if XLA cannot compile it for CPU.
        """
        return str(self.cache.get_or_compute(
            ("observation", state.digest, f"executable_digest:{pipeline}@{host_key()}"),
            lambda: self._call("executable_digest", state.text, pipeline, what="compiling for the executable digest"),
        ))

    def backend_cost(self, state: Analysis, pipeline: str = "full") -> tuple:
        """``BackendCost`` of ``state`` (``catalog.backend.BACKEND_KEYS`` order): what XLA's CPU
        pipeline (``schema.RUNTIME_PIPELINES``) makes of it, and the roofline estimate.
        Cached per :func:`host_key` and the roofline's version.

        Raises :class:`ExecutionError` if XLA cannot compile it for CPU.
        """
        if pipeline not in RUNTIME_PIPELINES:
            raise ValueError(f"Expected a runtime pipeline in {list(RUNTIME_PIPELINES)}, got {pipeline!r}")
        key = f"backend_cost:{pipeline}:v{BACKEND_SEMANTICS_VERSION}@{host_key()}"
        return tuple(self.cache.get_or_compute(
            ("observation", state.digest, key),
            lambda: self._call("backend_cost", state.text, pipeline, what="compiling for the backend cost"),
        ))

    def runtime(self, state: Analysis, repetitions: int, seed: int, pipeline: str = "full") -> list:
        """Seconds per execution of ``state`` compiled by XLA's CPU pipeline
        (``schema.RUNTIME_PIPELINES``), warm-up excluded.

        Raises :class:`ExecutionError` if XLA cannot compile or run it on CPU.
        """
        return list(self._call("runtime", state.text, repetitions, seed, pipeline, what="measuring the runtime"))

    def validate(self, original: Analysis, current: Analysis, seed: int) -> dict[str, object]:
        """Execute both on the same seeded inputs and compare (see ``validation.validate``)."""
        return dict(self._call("validate", original.text, current.text, seed, what="validating"))

    # ---------------------------------------------------------------- workers

    def request(self, method: str, *args: object) -> Any:
        """Run one worker request by name (``worker.py``): for diagnostics,
        benchmarks and the test-only requests. Raises :class:`WorkerDied` if the
        worker dies."""
        return self._pool.call(method, *args, timeout=self.step_timeout)

    def _call(self, method: str, *args: object, what: str = "") -> Any:
        """Call a worker; a worker that dies becomes a clear error naming ``what``."""
        try:
            return self._pool.call(method, *args, timeout=self.step_timeout)
        except WorkerDied as died:
            if not what:
                raise
            error = BenchmarkError if method == "load" else (
                PassCrashedError if method.startswith(("run_", "finish_", "default")) else ExecutionError
            )
            raise error(
                f"XLA crashed {what}: {died}. The worker was replaced and the session "
                "keeps its state.",
                transient=not died.xla_aborted,
            ) from None

    def _with_dumps(
        self,
        run: Callable[[str], Analysis | None],
        recover: Callable[[str, str], Analysis | None],
        what: str,
    ) -> Analysis | None:
        """Run a compile in a scratch dump folder.

        If XLA aborts the worker after the pass has finished (in the backend,
        which a partial pipeline often upsets), the result is read from the
        dumps by another worker; if the pass itself did not finish, the step
        fails with :class:`PassCrashedError`.
        """
        try:
            with self._scratch.folder() as dump_dir:
                try:
                    return run(dump_dir)
                except WorkerDied as died:
                    logger.warning("A worker died running %s: %s", what, died)
                    try:
                        return recover(dump_dir, f"XLA aborted: {died}")
                    except (PassCrashedError, WorkerDied) as e:
                        # Only XLA's own abort (a CHECK failure) in the pass is a
                        # property of the module and the pass; a killed worker is not.
                        raise PassCrashedError(
                            f"XLA crashed running {what!r}: {died}. The worker was replaced "
                            "and the session keeps its state.",
                            transient=not died.xla_aborted or isinstance(e, WorkerDied),
                        ) from e
        finally:
            self._scratch.sweep(self._pool.replaced)

    # ------------------------------------------------------------- the service

    def stats(self) -> dict[str, object]:
        """Cache and worker counters (the ``xla.engine.stats`` session parameter)."""
        cache = self.cache.stats()
        return {
            "hits": sum(cache["hits"].values()),
            "misses": sum(cache["misses"].values()),
            "cache": cache,
            "cached_results": cache["entries"],
            "cache_bytes": cache["bytes"],
            "workers": self._pool.size,
            "workers_replaced": self._pool.replaced,
            "workers_preempted": self._pool.preempted,
            "worker_memory_limit": self._pool.memory_limit,
            "step_timeout": self.step_timeout,
        }

    def resize(self, workers: int) -> None:
        """Run ``workers`` worker processes (waits for busy ones to finish)."""
        self._pool.resize(workers)

    @property
    def workers_replaced(self) -> int:
        return self._pool.replaced

    def worker_pids(self) -> list[int]:
        """The process ids of the live workers."""
        return [w.process.pid for w in self._pool.workers()]

    @property
    def scratch(self) -> str:
        """The folder that holds every step's dumps (removed by :meth:`close`)."""
        return self._scratch.path

    def close(self) -> None:
        self._pool.close()
        self._scratch.close()

