"""The state graphs of ``python -m leaderboard.optimum`` as a table, beside the best committed result.

``python -m leaderboard.optimum.report [--out DIR] [--json FILE]``

One row per graph file: initial op count, states found (expanded) and
transitions tried, how the search stopped, the optimum and what it is
(``optimal``, ``optimal among orders of length <= D`` or ``best found``),
whether its order validated by execution, the fewest ops any committed
validated result file of the test split or the held-out families reached
(``leaderboard.report.headroom``), and the states found per depth (the growth).
``--json`` also writes the rows (the graphs' summaries, without their states
and transitions): what the reproduce stage commits.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from leaderboard.optimum.files import default_out, graph_files, read_result

__all__ = ["main", "rows"]


def rows(out: Path, committed: dict[str, float]) -> list[dict[str, Any]]:
    """One summary per state graph file below ``out``; ``committed``: URI -> best committed op count."""
    table: list[dict[str, Any]] = []
    for path in graph_files(out):
        data = read_result(path)
        o = data["optimum"]
        table.append({
            "benchmark": data["benchmark"],
            "initial": data["initial_op_count"],
            "states": data["states_found"],
            "expanded": data["states_expanded"],
            "transitions": data["transitions_tried"],
            "stopped": data["stopped"],
            "seconds": data.get("seconds"),
            "optimum": o["op_count"],
            "bound": o["bound"],
            "order": " ".join(o["order"]) or "(none)",
            "validated": o["validated"],
            "committed": committed.get(data["benchmark"]),
            "growth": "/".join(str(found) for found, _ in data["growth"]),
        })
    return table


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m leaderboard.optimum.report", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=default_out(),
                   help="the state graphs' folder: a search's --out, or an export such as "
                        "leaderboard/results/optimum/graphs (default: %(default)s)")
    p.add_argument("--json", type=Path, default=None, help="also write the rows to this JSON file (default: none)")
    args = p.parse_args(argv)
    from leaderboard.report.figures import HERE
    from leaderboard.report.headroom import best_op_counts, validated_results

    used = [path for split in ("test", "heldout") for path in validated_results(HERE / "agents", split)[0]]
    committed, _ = best_op_counts(used)
    table = rows(args.out, committed)
    if not table:
        raise SystemExit(f"--out: expected state graph files (python -m leaderboard.optimum) in {args.out}, got none")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(table, indent=1) + "\n")
    print("| benchmark | initial ops | states (expanded) | transitions | stopped | seconds | optimum | bound "
          "| order | validated | best committed | states by depth |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in table:
        best = "-" if r["committed"] is None else f"{r['committed']:g}"
        print(f"| {r['benchmark'].split('://')[-1]} | {r['initial']} | {r['states']} ({r['expanded']}) | "
              f"{r['transitions']} | {r['stopped']} | {r['seconds']} | {r['optimum']} | {r['bound']} | "
              f"{r['order']} | {r['validated']} | {best} | {r['growth']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
