"""The generator's disk cache: each generated module and its metadata, by seed (jax-free).

Where: ``$XLA_GYM_GENERATED`` (a folder, or ``off`` to disable), by default
``$XDG_CACHE_HOME/xla-gym/generated/`` (``~/.cache/...``). Under it one folder
per key, ``v<generator version>-jaxlib<version>-engine<engine semantics>``
(another jaxlib, generator or normalization never reads these files), holding
``<seed>[-ops<MIN>-<MAX>].hlo.gz`` (the normalized HLO text, gzip) and the
``.json`` metadata beside it (the grammar draw, sizes, dtypes, opcodes,
rejected draws). Files are written atomically (a temporary file renamed); a
module whose SHA-256 does not match its metadata is a miss.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from xla_service.catalog import ENGINE_SEMANTICS_VERSION
from xla_service.catalog.generator import VERSION, Recipe

__all__ = ["CACHE_VARIABLE", "cache_root", "cache_folder", "read", "read_metadata", "write"]

CACHE_VARIABLE = "XLA_GYM_GENERATED"
_OFF = ("off", "none", "0", "false")


def cache_root() -> Path | None:
    """The cache's folder, or None when ``$XLA_GYM_GENERATED`` turns it off."""
    value = os.environ.get(CACHE_VARIABLE, "").strip()
    if value.lower() in _OFF:
        return None
    if value and value.lower() != "default":
        return Path(value).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "xla-gym" / "generated"


def cache_key(jaxlib: str | None = None) -> str:
    """The folder name: what a cached module depends on besides its recipe."""
    return f"v{VERSION}-jaxlib{jaxlib or version('jaxlib')}-engine{ENGINE_SEMANTICS_VERSION}"


def cache_folder(root: Path | None = None, jaxlib: str | None = None) -> Path | None:
    root = root or cache_root()
    return None if root is None else root / cache_key(jaxlib)


def _paths(recipe: Recipe, root: Path | None, jaxlib: str | None) -> tuple[Path, Path] | None:
    folder = cache_folder(root, jaxlib)
    if folder is None:
        return None
    return folder / f"{recipe.name}.hlo.gz", folder / f"{recipe.name}.json"

# --------------------------------------------------------------------------- reads


def read_metadata(recipe: Recipe, root: Path | None = None, jaxlib: str | None = None) -> dict[str, Any] | None:
    """The metadata of a cached module, or None."""
    paths = _paths(recipe, root, jaxlib)
    if paths is None:
        return None
    try:
        value = json.loads(paths[1].read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read(recipe: Recipe, root: Path | None = None, jaxlib: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """``(text, metadata)`` of a cached module, or None (absent, off, or not matching its digest)."""
    paths = _paths(recipe, root, jaxlib)
    metadata = read_metadata(recipe, root, jaxlib)
    if paths is None or metadata is None:
        return None
    try:
        text = gzip.decompress(paths[0].read_bytes()).decode("utf-8")
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError):
        return None
    if hashlib.sha256(text.encode()).hexdigest() != metadata.get("sha256"):
        return None
    return text, metadata


# -------------------------------------------------------------------------- writes


def _replace(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write(recipe: Recipe, text: str, metadata: dict[str, Any], root: Path | None = None) -> Path | None:
    """Keep a module and its metadata (best effort: a cache that cannot be written is skipped);
    returns the module's path, or None."""
    paths = _paths(recipe, root, None)
    if paths is None:
        return None
    try:
        paths[0].parent.mkdir(parents=True, exist_ok=True)
        _replace(paths[0], gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0))
        _replace(paths[1], (json.dumps(metadata, indent=1, sort_keys=True) + "\n").encode())
    except OSError:
        return None
    return paths[0]
