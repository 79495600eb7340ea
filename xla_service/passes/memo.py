"""A small thread-safe LRU memo with hit and miss counters (no jax)."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Memo"]


class Memo:
    """Remembers up to ``size`` results of deterministic computations."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"Expected a memo size of at least 1, got {size}")
        self.size = size
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The remembered value of ``key``, else ``compute()`` (outside the lock)."""
        with self._lock:
            if key in self._items:
                self.hits += 1
                self._items.move_to_end(key)
                return self._items[key]
            self.misses += 1
        value = compute()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
