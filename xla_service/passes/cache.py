"""The engine's one cache: results of deterministic XLA work, by content.

XLA passes, loads, the default pipeline and the deterministic observations
(cost analysis, graph, proto) depend only on the module text and the pinned
jaxlib, so their results are kept by ``(kind, digest, argument)``: a
benchmark's text digest for loads, a state's digest and the pass name for
steps, the digest and the observation name for observations. XLA's
deterministic failures are kept too (raised again, not recomputed); transient
ones (a killed worker, a timeout) never are.

Memory holds the most recently used entries, bounded in count and bytes. A
:class:`Backing` (the persistent experience store) may sit behind it: misses
are looked up there, and new results are written there.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from xla_service.errors import XlaGymError

__all__ = ["Cache", "Backing", "Failure", "Key", "MISS", "size_of"]

#: ``(kind, digest, argument)``: e.g. ``("step", <state digest>, "cse")``.
Key = tuple[str, str, str]


class _Miss:
    """What a lookup returns when nothing is cached (``None`` is a value: a step
    that changed nothing)."""

    def __repr__(self) -> str:
        return "MISS"


MISS: Any = _Miss()


@dataclass(frozen=True)
class Failure:
    """XLA's deterministic verdict on a computation: raised again on every hit."""

    error_type: type[XlaGymError]
    message: str

    def raise_(self) -> None:
        raise self.error_type(self.message)


class Backing(Protocol):
    """A second, larger tier behind the memory cache (e.g. the experience store)."""

    def get(self, key: Key) -> Any:
        """The value stored under ``key`` (a :class:`Failure` included), or :data:`MISS`."""

    def put(self, key: Key, value: Any) -> None:
        """Store ``value`` (best effort: a backing may drop it)."""


def size_of(value: Any) -> int:
    """Bytes a value holds, roughly (texts and byte strings dominate)."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (tuple, list)):
        return 64 + sum(size_of(v) for v in value)
    if isinstance(value, Failure):
        return 64 + len(value.message)
    held = getattr(value, "nbytes", None)
    if callable(held):
        return int(held())
    return 256


class Cache:
    """A thread-safe LRU of computed results, with hit and miss counters per kind."""

    def __init__(
        self, entries: int = 8192, max_bytes: int = 512 * 1024 * 1024, backing: Backing | None = None
    ) -> None:
        if entries < 1 or max_bytes < 1:
            raise ValueError(f"Expected a positive cache size, got {entries} entries, {max_bytes} bytes")
        self.entries, self.max_bytes, self.backing = entries, max_bytes, backing
        self.bytes = 0
        self._items: OrderedDict[Key, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits: dict[str, int] = {}
        self.misses: dict[str, int] = {}
        self.backing_hits: dict[str, int] = {}

    def get_or_compute(self, key: Key, compute: Callable[[], Any]) -> Any:
        """The cached value of ``key``, else ``compute()`` (outside the lock), kept.

        An :class:`XlaGymError` that is not ``transient`` is XLA's verdict: it is
        kept as a :class:`Failure` and raised again on later lookups.
        """
        found = self.lookup(key)
        if found is MISS:
            try:
                found = compute()
            except XlaGymError as e:
                if e.transient:
                    raise
                found = Failure(type(e), str(e))
            self.store(key, found)
        if isinstance(found, Failure):
            found.raise_()
        return found

    def lookup(self, key: Key) -> Any:
        """The value of ``key`` from memory, else from the backing (then kept), else :data:`MISS`."""
        kind = key[0]
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
                self.hits[kind] = self.hits.get(kind, 0) + 1
                return item[0]
            self.misses[kind] = self.misses.get(kind, 0) + 1
        if self.backing is None:
            return MISS
        value = self.backing.get(key)
        if value is not MISS:
            with self._lock:
                self.backing_hits[kind] = self.backing_hits.get(kind, 0) + 1
            self._keep(key, value)
        return value

    def peek(self, key: Key) -> Any:
        """The value of ``key`` in memory, or :data:`MISS` (no counters, no backing)."""
        with self._lock:
            item = self._items.get(key)
        return MISS if item is None else item[0]

    def store(self, key: Key, value: Any) -> None:
        """Keep ``value`` in memory and write it to the backing."""
        self._keep(key, value)
        if self.backing is not None:
            self.backing.put(key, value)

    def _keep(self, key: Key, value: Any) -> None:
        size = 128 + size_of(value)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._items[key] = (value, size)
            self.bytes += size
            while self._items and (len(self._items) > self.entries or self.bytes > self.max_bytes):
                self.bytes -= self._items.popitem(last=False)[1][1]

    def clear(self) -> None:
        """Forget every entry in memory (the backing keeps its own)."""
        with self._lock:
            self._items.clear()
            self.bytes = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def stats(self) -> dict[str, Any]:
        """Counters by kind of entry, and the memory held."""
        with self._lock:
            return {
                "entries": len(self._items),
                "bytes": self.bytes,
                "hits": dict(self.hits),
                "misses": dict(self.misses),
                "backing_hits": dict(self.backing_hits),
            }
