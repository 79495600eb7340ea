"""The state graphs as a dataset: each benchmark's whole MDP under the op count.

``python -m leaderboard.optimum.export [--out RUNS] DEST``

Copies every state graph file of a search (``python -m leaderboard.optimum
--out RUNS``) to ``DEST/<suite>/<name>.json.gz``, gzipped so that the same
graph always gives the same bytes, and writes ``DEST/index.json``: one entry
per benchmark (its file, the semantics it was computed under, states,
transitions, whether the set was exhausted, the optimum and its bound).

A graph file holds every distinct state (digest, depth, op count, opcode
histogram, the step that first reached it) and every transition tried
(``[state, pass, outcome]``, the outcome the next state's index,
``"unchanged"`` or ``"failed"``): where ``exhausted`` is true, the complete
MDP, for offline RL and for scoring a world model against the true
transitions. Read one with :func:`leaderboard.optimum.files.read_result`;
the semantics key (jaxlib, engine, pass catalog, op count rule) says which
jaxlib produced it: other versions may reach other states.
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from leaderboard.optimum.files import INDEX, default_out, graph_files, read_result

__all__ = ["export", "main"]


def _entry(data: dict[str, Any], file: str) -> dict[str, Any]:
    return {
        "benchmark": data["benchmark"],
        "file": file,
        "semantics": data["semantics"],
        "initial_op_count": data["initial_op_count"],
        "states": len(data["states"]),
        "transitions": len(data["transitions"]),
        "exhausted": data["exhausted"],
        "optimum": data["optimum"]["op_count"],
        "bound": data["optimum"]["bound"],
    }


def export(out: Path, dest: Path) -> list[dict[str, Any]]:
    """Write ``out``'s graphs to ``dest`` (gzipped) and its index; return the index entries."""
    entries = []
    for path in graph_files(out):
        data = read_result(path)
        relative = Path(*path.relative_to(out).parts)
        name = relative.name.removesuffix(".gz").removesuffix(".json") + ".json.gz"
        target = dest / relative.parent / name
        target.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
        target.write_bytes(gzip.compress(body, mtime=0))
        entries.append(_entry(data, str(target.relative_to(dest))))
    entries.sort(key=lambda e: e["benchmark"])
    (dest / INDEX).write_text(json.dumps(entries, indent=1) + "\n")
    return entries


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m leaderboard.optimum.export", description=__doc__.split("\n")[0])
    p.add_argument("dest", type=Path, help="the dataset's folder, e.g. leaderboard/results/optimum/graphs")
    p.add_argument("--out", type=Path, default=default_out(),
                   help="the search's folder (python -m leaderboard.optimum --out; default: %(default)s)")
    args = p.parse_args(argv)
    if args.out.resolve() == args.dest.resolve():
        raise SystemExit(f"Expected a destination other than the search's folder, got {args.dest} for both")
    entries = export(args.out, args.dest)
    if not entries:
        raise SystemExit(f"--out: expected state graph files (python -m leaderboard.optimum) in {args.out}, got none")
    exhausted = sum(e["exhausted"] for e in entries)
    print(f"{len(entries)} state graphs ({exhausted} exhausted) -> {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
