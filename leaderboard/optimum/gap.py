"""Every agent's gap to the optimum: ops above it, and the share of benchmarks solved optimally.

``python -m leaderboard.optimum.gap [--out DIR] RESULTS.csv [...]``

A results CSV (``leaderboard.harness``: ``benchmark,reward,walltime,commandline``,
the reward the ``OpCount`` return) gives each benchmark's final op count as
``initial - reward``; the state graph files of ``python -m leaderboard.optimum``
give the optimum (and the initial op count, the same engine's). Only the
benchmarks with a graph count. Where the graph was not exhausted its best is
a bound (optimal among orders up to a length, or only the best found): a result
below it is counted as ``below_bound`` (the search's budget missed it), never
as a negative gap; below an exhausted optimum it is an error in one of them.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderboard.optimum.files import default_out, graph_files, read_result

__all__ = ["Gap", "gap", "main", "optima"]


@dataclass(frozen=True)
class Gap:
    """One results file against the optima."""

    results: str
    #: Benchmarks with both a result and a state graph.
    n: int
    #: Of these, where the graph was exhausted (its optimum is exact).
    exact: int
    #: Mean over the ``n`` benchmarks of (final - optimum) ops, and the largest.
    mean_ops_above: float
    max_ops_above: float
    #: Share of the ``n`` benchmarks whose result reaches the optimum (or the bound).
    solved_optimally: float
    #: Benchmarks whose result is below a non-exhausted graph's best.
    below_bound: tuple[str, ...]


def optima(out: Path) -> dict[str, dict[str, Any]]:
    """Benchmark URI -> ``{initial, optimum, exhausted, bound}`` of every state graph file below ``out``."""
    found: dict[str, dict[str, Any]] = {}
    for path in graph_files(out):
        data = read_result(path)
        found[data["benchmark"]] = {
            "initial": int(data["initial_op_count"]),
            "optimum": int(data["optimum"]["op_count"]),
            "exhausted": bool(data["exhausted"]),
            "bound": data["optimum"]["bound"],
        }
    return found


def gap(results: Path, known: dict[str, dict[str, Any]]) -> Gap:
    """``results``' gap to the optima ``known`` (:func:`optima`)."""
    from leaderboard.report.summary import read_results

    above: list[float] = []
    exact = 0
    below: list[str] = []
    for state in read_results([str(results)]):
        entry = known.get(state.benchmark)
        if entry is None:
            continue
        final = entry["initial"] - float(state.reward or 0.0)
        ops = final - entry["optimum"]
        if ops < 0:
            if entry["exhausted"]:
                raise ValueError(
                    f"{results}: {state.benchmark} reaches {final:g} ops, expected at least the exhausted "
                    f"search's optimum {entry['optimum']}: the results or the graph are of other semantics"
                )
            below.append(state.benchmark)
            ops = 0.0
        exact += entry["exhausted"]
        above.append(ops)
    n = len(above)
    return Gap(
        results=str(results),
        n=n,
        exact=exact,
        mean_ops_above=sum(above) / n if n else 0.0,
        max_ops_above=max(above, default=0.0),
        solved_optimally=sum(a == 0 for a in above) / n if n else 0.0,
        below_bound=tuple(below),
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m leaderboard.optimum.gap", description=__doc__.split("\n")[0])
    p.add_argument("results", nargs="+", type=Path, help="results CSVs (leaderboard.harness)")
    p.add_argument("--out", type=Path, default=default_out(),
                   help="the state graphs' folder: a search's --out, or an export such as "
                        "leaderboard/results/optimum/graphs (default: %(default)s)")
    args = p.parse_args(argv)
    known = optima(args.out)
    if not known:
        raise SystemExit(f"--out: expected state graph files (python -m leaderboard.optimum) in {args.out}, got none")
    print("| results | benchmarks (exact) | ops above optimum, mean (max) | solved optimally | below bound |")
    print("|---|---|---|---|---|")
    for path in args.results:
        g = gap(path, known)
        if not g.n:
            continue
        print(f"| {path} | {g.n} ({g.exact}) | {g.mean_ops_above:.1f} ({g.max_ops_above:g}) | "
              f"{g.solved_optimally:.0%} | {len(g.below_bound)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
