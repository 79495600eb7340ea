"""A thread-safe, size-bounded cache of ``Benchmark`` messages, keyed by URI.

CompilerGym's client sends a benchmark's program once (``AddBenchmark``, or
inside ``StartSession``) and then refers to it by URI, so the service keeps
recent programs. When the cache is over budget it evicts the least recently
used benchmarks first (CompilerGym's own cache evicts at random).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from xla_service.errors import XlaGymError
from xla_service.proto import Benchmark

__all__ = ["DEFAULT_MAX_SIZE_IN_BYTES", "BenchmarkCache", "BenchmarkNotFoundError"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_SIZE_IN_BYTES = 256 * 1024 * 1024
"""256 MiB, CompilerGym's intended default."""


class BenchmarkNotFoundError(XlaGymError, LookupError):
    """A benchmark URI that the service has not been sent (maps to NOT_FOUND)."""


class BenchmarkCache:
    """Benchmarks by URI, at most ``max_size_in_bytes`` of them (by ``ByteSize()``).

    A single benchmark larger than the whole budget is still kept, alone, so
    that the session that needs it can start.
    """

    def __init__(self, max_size_in_bytes: int = DEFAULT_MAX_SIZE_IN_BYTES) -> None:
        if max_size_in_bytes < 0:
            raise ValueError(f"max_size_in_bytes must be >= 0, got {max_size_in_bytes}")
        self._max_size_in_bytes = max_size_in_bytes
        self._size_in_bytes = 0
        self._benchmarks: OrderedDict[str, Benchmark] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._benchmarks)

    def __contains__(self, uri: object) -> bool:
        with self._lock:
            return uri in self._benchmarks

    @property
    def size_in_bytes(self) -> int:
        """The summed ``ByteSize()`` of the cached benchmarks."""
        with self._lock:
            return self._size_in_bytes

    @property
    def max_size_in_bytes(self) -> int:
        """The budget; setting it evicts down to the new value."""
        with self._lock:
            return self._max_size_in_bytes

    @max_size_in_bytes.setter
    def max_size_in_bytes(self, value: int) -> None:
        if value < 0:
            raise ValueError(f"max_size_in_bytes must be >= 0, got {value}")
        with self._lock:
            self._max_size_in_bytes = value
            self._evict_to(value)

    def get(self, uri: str) -> Benchmark | None:
        """The benchmark for ``uri`` (marking it recently used), or None."""
        with self._lock:
            benchmark = self._benchmarks.get(uri)
            if benchmark is not None:
                self._benchmarks.move_to_end(uri)
            return benchmark

    def __getitem__(self, uri: str) -> Benchmark:
        """The benchmark for ``uri``. Raises :class:`BenchmarkNotFoundError`."""
        benchmark = self.get(uri)
        if benchmark is None:
            raise BenchmarkNotFoundError(f"Benchmark not found: {uri}")
        return benchmark

    def add(self, benchmark: Benchmark) -> None:
        """Store ``benchmark`` under its URI, replacing any previous one."""
        uri = benchmark.uri
        size = benchmark.ByteSize()
        with self._lock:
            old = self._benchmarks.pop(uri, None)
            if old is not None:
                self._size_in_bytes -= old.ByteSize()
            if size > self._max_size_in_bytes:
                logger.warning(
                    "Benchmark %s is %d bytes, more than the cache's %d bytes: it is kept alone",
                    uri,
                    size,
                    self._max_size_in_bytes,
                )
            self._evict_to(max(self._max_size_in_bytes - size, 0))
            self._benchmarks[uri] = benchmark
            self._size_in_bytes += size
            logger.debug(
                "Cached benchmark %s (%d bytes); cache holds %d benchmarks, %d bytes",
                uri,
                size,
                len(self._benchmarks),
                self._size_in_bytes,
            )

    def _evict_to(self, target_size_in_bytes: int) -> None:
        """Evict least recently used entries until the size is <= target. Lock held."""
        evicted = 0
        while self._benchmarks and self._size_in_bytes > target_size_in_bytes:
            _, benchmark = self._benchmarks.popitem(last=False)
            self._size_in_bytes -= benchmark.ByteSize()
            evicted += 1
        if evicted:
            logger.info(
                "Evicted %d benchmarks; cache holds %d benchmarks, %d bytes",
                evicted,
                len(self._benchmarks),
                self._size_in_bytes,
            )
