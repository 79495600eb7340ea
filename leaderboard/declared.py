"""Seeds declared before a run (``leaderboard/PROTOCOL.md``): a batch's seeds are fixed before any is
looked at, and never extended after.

``python -m leaderboard.declared DIR PATTERN SEEDS [--note TEXT]``, e.g.
``python -m leaderboard.declared leaderboard/agents/gnn/results/batch2 'gnn-gpt2-seed*' 0-4``, writes
the declaration to ``DIR/seeds.json`` before the run; it refuses to change a batch already declared
(a new batch is a new pattern, declared before it runs, and reported on its own).

``DIR/seeds.json``: ``{"batches": [{"pattern": "gnn-gpt2-seed*", "seeds": [0, 1, 2, 3, 4],
"declared": "2026-12-05T02:20:00Z", "note": "..."}]}``. A results file in ``DIR`` whose name
matches a batch's pattern (``fnmatch``) belongs to that batch: ``leaderboard.report.summary`` refuses it when
its seed (``seed<k>`` in its name) is not declared, and ``leaderboard.report.seeds`` (with ``efficiency``
and ``improvement``, which read its tables) refuses a row whose files of a batch do not hold exactly
the declared seeds (:func:`check_declared`). Files in no batch (made before the protocol) are read as
before.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from leaderboard.protocol import ProtocolError

__all__ = ["DECLARATION", "SeedDeclarationError", "batch_of", "check_declared", "check_file", "declare", "main",
           "parse_seeds"]

#: The declaration file, in the directory of the results it governs.
DECLARATION = "seeds.json"
#: A learned row's fewest seeds (``leaderboard/PROTOCOL.md``).
MIN_SEEDS = 5


class SeedDeclarationError(ProtocolError):
    """Results whose seeds differ from the seeds declared before their run."""


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"0,2,7-8"`` -> [0, 2, 7, 8]."""
    seeds: set[int] = set()
    for part in text.split(","):
        found = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not found or (found[2] and int(found[2]) < int(found[1])):
            raise ValueError(f"expected seeds such as 0-4 or 0,2,7-8, got {text!r}")
        seeds.update(range(int(found[1]), int(found[2] or found[1]) + 1))
    return sorted(seeds)


def _batches(directory: Path) -> list[dict[str, Any]]:
    path = directory / DECLARATION
    if not path.is_file():
        return []
    data = json.loads(path.read_text())
    batches = data.get("batches") if isinstance(data, dict) else None
    if not isinstance(batches, list) or not all(isinstance(b, dict) and "pattern" in b and "seeds" in b for b in batches):
        raise SeedDeclarationError(f"expected {{'batches': [{{'pattern': ..., 'seeds': [...]}}, ...]}} in {path}, got {data!r}")
    return batches


def batch_of(results: str | Path) -> dict[str, Any] | None:
    """The declared batch the results file at ``results`` belongs to, or None (with ``"file"``: its
    declaration file)."""
    path = Path(results)
    matching = [b for b in _batches(path.parent) if fnmatch.fnmatch(path.name, b["pattern"])]
    if len(matching) > 1:
        raise SeedDeclarationError(
            f"expected {path.name} in one declared batch of {path.parent / DECLARATION}, got patterns "
            f"{[b['pattern'] for b in matching]}")
    return {**matching[0], "file": str(path.parent / DECLARATION)} if matching else None


def _seed(path: Path) -> int:
    found = re.findall(r"seed(\d+)", path.name)
    if not found:
        raise SeedDeclarationError(f"expected 'seed<k>' in {path.name}, which a declared batch governs")
    return int(found[-1])


def check_file(results: str | Path) -> None:
    """Refuse a results file whose seed its batch did not declare."""
    batch = batch_of(results)
    if batch is not None and _seed(Path(results)) not in batch["seeds"]:
        raise SeedDeclarationError(
            f"{Path(results).name} is seed {_seed(Path(results))}, which {batch['file']} did not declare for "
            f"{batch['pattern']!r} (declared {batch['seeds']} at {batch.get('declared', '?')}): seeds are never "
            f"added after looking; declare a new batch before running more")


def check_declared(paths: Iterable[str | Path], label: str = "") -> None:
    """Refuse ``paths`` (one row's results files) when, for some declared batch, their seeds are not
    exactly its declared seeds: extra ones, or missing ones."""
    found: dict[tuple[str, str], set[int]] = {}
    declared: dict[tuple[str, str], list[int]] = {}
    for path in map(Path, paths):
        batch = batch_of(path)
        if batch is not None:
            key = (batch["file"], batch["pattern"])
            found.setdefault(key, set()).add(_seed(path))
            declared[key] = sorted(batch["seeds"])
    for key, seeds in found.items():
        extra, missing = sorted(seeds - set(declared[key])), sorted(set(declared[key]) - seeds)
        if extra or missing:
            raise SeedDeclarationError(
                f"{'row ' + repr(label) + ': ' if label else ''}expected the seeds {declared[key]} declared in "
                f"{key[0]} for {key[1]!r}, got {sorted(seeds)} (extra: {extra}, missing: {missing})")


def declare(directory: str | Path, pattern: str, seeds: Sequence[int], note: str = "") -> Path:
    """Record ``seeds`` for the batch ``pattern`` in ``directory``'s declaration; refuses a change to a
    batch already declared. The declaration's path."""
    directory = Path(directory)
    batches = _batches(directory)
    for batch in batches:
        if batch["pattern"] == pattern:
            if sorted(batch["seeds"]) == sorted(seeds):
                return directory / DECLARATION  # declared already, the same: a stage run again
            raise SeedDeclarationError(
                f"expected the seeds {batch['seeds']} declared for {pattern!r} at {batch.get('declared', '?')}, "
                f"got {sorted(seeds)}: a declared batch is never changed; declare a new pattern")
    batches.append({"pattern": pattern, "seeds": sorted(seeds), "note": note,
                    "declared": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / DECLARATION
    path.write_text(json.dumps({"batches": batches}, indent=1) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", help="the directory the batch's results files will be written to")
    parser.add_argument("pattern", help="the batch's results file names, e.g. 'gnn-gpt2-seed*'")
    parser.add_argument("seeds", help="the seeds, e.g. 0-4 or 0,2,7-8")
    parser.add_argument("--note", default="", help="what the batch is for")
    parser.add_argument("--learned", action="store_true",
                        help=f"a learned agent's batch: at least {MIN_SEEDS} seeds")
    args = parser.parse_args(argv)
    try:
        seeds = parse_seeds(args.seeds)
        if args.learned and len(seeds) < MIN_SEEDS:
            raise ValueError(f"expected at least {MIN_SEEDS} seeds for a learned row, got {len(seeds)}")
        print(declare(args.directory, args.pattern, seeds, args.note))
    except (ValueError, SeedDeclarationError) as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
