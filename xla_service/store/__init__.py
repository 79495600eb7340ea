"""The persistent experience store: every step the engine computes, kept across runs.

``ExperienceStore`` (SQLite, ``sqlite.py``; ``PostgresStore`` on a server for a
cluster, ``postgres.py``; their logic in ``sql.py``) sits behind the engine's cache
(``passes/cache.py``): a service looks a step up there before running XLA and
writes what it computes, so every service and worker on the machine, and
every later run, reuses it. ``python -m xla_service.store stats|verify|clear|export``
manages it. Where it lives: ``$XLA_GYM_STORE`` (a file path, or ``off``),
by default ``$XDG_CACHE_HOME/xla-gym/experience.sqlite`` (``~/.cache/...``),
or a ``postgresql://`` URL for a store shared by many machines.
"""
from __future__ import annotations

import os
from pathlib import Path

from xla_service.store.sql import DEFAULT_MAX_BYTES, SqlStore
from xla_service.store.sqlite import ExperienceStore

__all__ = [
    "ExperienceStore",
    "SqlStore",
    "STORE_VARIABLE",
    "STORE_BYTES_VARIABLE",
    "default_path",
    "open_store",
    "sqlite_path",
]

STORE_VARIABLE = "XLA_GYM_STORE"
STORE_BYTES_VARIABLE = "XLA_GYM_STORE_BYTES"
_OFF = ("", "off", "none", "0", "false")


def default_path() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "xla-gym" / "experience.sqlite"


def _setting(setting: str | None) -> str:
    return os.environ.get(STORE_VARIABLE, "default") if setting is None else setting


def sqlite_path(setting: str | None = None) -> Path | None:
    """The SQLite file that ``setting`` (default ``$XLA_GYM_STORE``) names; None when off or a URL."""
    value = _setting(setting)
    if value.strip().lower() in _OFF or value.startswith(("postgresql://", "postgres://")):
        return None
    return default_path() if value.strip().lower() == "default" else Path(value).expanduser()


def open_store(setting: str | None = None) -> SqlStore | None:
    """The store that ``setting`` (default ``$XLA_GYM_STORE``) names: a path, ``default``,
    a ``postgresql://`` URL, or ``off``; None when off."""
    value = _setting(setting)
    if value.strip().lower() in _OFF:
        return None
    max_bytes = int(os.environ.get(STORE_BYTES_VARIABLE, DEFAULT_MAX_BYTES))
    path = sqlite_path(value)
    if path is None:
        from xla_service.store.postgres import PostgresStore

        return PostgresStore(value, max_bytes=max_bytes)
    return ExperienceStore(path, max_bytes=max_bytes)
