"""The states an engine made of benchmarks' programs, by the program's bytes (no jax).

CompilerGym's client sends a benchmark once, then starts every episode of it
by URI: the service hands each session the same ``Benchmark`` message, so
the same program bytes. A session of a benchmark seen before takes its
state from here, without decompressing, counting and hashing the module text
again only to find it in the engine's cache.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import Engine

__all__ = ["LoadedBenchmarks", "loaded_benchmarks"]


class LoadedBenchmarks:
    """Loaded states by program bytes: for the same bytes the engine would return
    an equal state (loads are deterministic). Least recently used first out,
    bounded in entries and in bytes (programs and states; the engine's cache
    mostly holds the same states).
    """

    def __init__(self, entries: int = 256, max_bytes: int = 128 * 1024 * 1024) -> None:
        self.entries, self.max_bytes = entries, max_bytes
        self._items: OrderedDict[bytes, tuple[Analysis, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, program: bytes) -> Analysis | None:
        with self._lock:
            item = self._items.get(program)
            if item is None:
                return None
            self._items.move_to_end(program)
            return item[0]

    def put(self, program: bytes, state: Analysis) -> None:
        size = len(program) + state.nbytes()
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(program, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[program] = (state, size)
            self._bytes += size
            while len(self._items) > self.entries or self._bytes > self.max_bytes:
                self._bytes -= self._items.popitem(last=False)[1][1]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


#: Per engine (sessions of other engines, as in tests, keep apart).
_loaded: weakref.WeakKeyDictionary[Engine, LoadedBenchmarks] = weakref.WeakKeyDictionary()
_loaded_lock = threading.Lock()


def loaded_benchmarks(engine: Engine) -> LoadedBenchmarks:
    """``engine``'s :class:`LoadedBenchmarks`."""
    with _loaded_lock:
        found = _loaded.get(engine)
        if found is None:
            found = _loaded[engine] = LoadedBenchmarks()
        return found
