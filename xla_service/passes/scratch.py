"""The scratch folder of an engine: where XLA dumps what each compile makes.

A step reads a pass's result from XLA's dumps (so a result survives XLA
aborting the worker afterwards, in the backend). Every compile gets its own
folder inside the engine's :class:`Scratch`, removed when the compile is done;
:meth:`Scratch.sweep` removes what dead workers left behind, and
:func:`clean_stale_scratch` what engines killed outright left behind.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterator

__all__ = ["Scratch", "clean_stale_scratch", "scratch_root"]

_PREFIX = "xla-gym-dumps-"


def scratch_root() -> str:
    """Where scratch folders go: ``/dev/shm`` (memory) if writable, else the temporary folder."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else tempfile.gettempdir()


def clean_stale_scratch(root: str | None = None) -> int:
    """Remove the scratch folders of engines whose process is gone (e.g. a service
    killed with SIGKILL); returns how many went."""
    root = root or scratch_root()
    removed = 0
    for name in os.listdir(root):
        m = re.match(rf"{_PREFIX}(\d+)-", name)
        if m is None:
            continue
        try:
            os.kill(int(m[1]), 0)
            continue  # its engine's process still runs
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        removed += 1
    return removed


class Scratch:
    """One engine's scratch folder (``path``), a subfolder per compile; removed by
    :meth:`close`, or at exit if never closed."""

    def __init__(self, root: str | None = None) -> None:
        self.path = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=root or scratch_root())
        self._remove = weakref.finalize(self, shutil.rmtree, self.path, True)
        self._lock = threading.Lock()
        self._active: set[str] = set()
        self._swept_at_replaced = 0

    @contextlib.contextmanager
    def folder(self) -> Iterator[str]:
        """A fresh folder for one compile's dumps, removed when the block ends."""
        dump_dir = tempfile.mkdtemp(prefix="step-", dir=self.path)
        with self._lock:
            self._active.add(dump_dir)
        try:
            yield dump_dir
        finally:
            shutil.rmtree(dump_dir, ignore_errors=True)
            with self._lock:
                self._active.discard(dump_dir)

    def sweep(self, replaced: int) -> None:
        """Remove dump folders that dead workers left behind (``replaced``: how many
        workers the pool has replaced so far).

        A worker replies as soon as the dumps hold its result and finishes the
        compile afterwards, removing the folder (which XLA re-creates when it
        dumps again after the engine removed it). If XLA aborts it, or the pool
        preempts it then, nobody does: after any worker replacement, every
        folder that belongs to no live worker's request goes (a live worker's
        compile at worst re-creates one, and removes it when done).
        """
        if replaced == self._swept_at_replaced:
            return
        self._swept_at_replaced = replaced
        with self._lock:
            active = set(self._active)
        try:
            names = os.listdir(self.path)
        except FileNotFoundError:
            return
        for name in names:
            path = os.path.join(self.path, name)
            if path not in active and not name.startswith("count-"):
                shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        self._remove()
