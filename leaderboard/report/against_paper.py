"""The paper's two sets, in the paper's metric: are its numbers beaten, with the interval excluding them?

``python -m leaderboard.report.against_paper`` prints docs/experiments/against-the-paper.md's "Against the paper"
table from the committed results CSVs (the full test split, every training seed).

The paper reports +13.3% on GPT-2 graphs and +10.4% on a mix of GPT-2, BERT
and ResNet graphs, in its metric: the geometric mean over benchmarks of
(N0 - N_agent) / (N0 - N_reference), minus one, where N0 is the op count as
loaded and the reference is the compiler's default ordering. Here the
reference is XLA's default pipeline (the manifests' default op count, the
paper's own reference) and, stricter, XLA's default passes replayed through
the env (``agents/default_pipeline``). A benchmark where the reference removes
nothing has no ratio (bf16 modules, where XLA's default adds ops); ratios
<= 0 are left out of the geometric mean, as the paper's metric does; the
table counts both.

A cell is the mean over seeds of each seed's metric, with a 95% two-level
bootstrap interval: resample seeds, then benchmarks (the same draw for every
seed), so the interval holds both how much another seed and how much other
benchmarks of the family would move the number. The verdict: **beaten** when
the interval is above the paper's number, **below** when it is under it,
**not shown** when it contains it.
"""
from __future__ import annotations

import argparse
import glob
import math
import random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from leaderboard.report.metrics import geomean_improvement, mean
from leaderboard.report.presets import PRESETS
from leaderboard.report.seeds import run_of
from leaderboard.report.summary import (
    PAPER_MIX_FAMILIES,
    agent_op_count,
    final_op_counts,
    op_counts,
    read_results,
)

__all__ = ["PAPER", "ROWS", "Cell", "against", "main", "markdown", "table", "verdict"]

#: The paper's sets: name -> (families, its PPO's number in its metric).
PAPER: dict[str, tuple[tuple[str, ...], float]] = {
    "GPT-2": (("xla-gpt2-v0",), 0.133),
    "GPT-2 + BERT + ResNet": (PAPER_MIX_FAMILIES, 0.104),
}
_BASELINE = str(PRESETS["rl"].baselines[0])  # the replayed default pipeline on the test split
#: The rows: the agents with results on the full test split, label -> globs (one file per seed).
ROWS: dict[str, str] = {
    **{f"{label}, 4,000 steps": pattern for label, pattern in PRESETS["rl"].rows},
    **{label: pattern for label, pattern in PRESETS["budget"].rows if "20,000" in label},
    **{f"{label}, 4,000 steps": pattern for label, pattern in PRESETS["gnn"].rows if "GNN" in label},
    "random search (240 s a benchmark, seed 0)": str(Path(__file__).parents[1] / "agents" / "random_search" / "results-test.csv"),
    "greedy search (deterministic: one run)": str(Path(__file__).parents[1] / "agents" / "greedy" / "results-test.csv"),
    "beam search (deterministic: one run)": str(Path(__file__).parents[1] / "agents" / "beam" / "results-test.csv"),
}
_DRAWS = 2000


@dataclass(frozen=True)
class Cell:
    """The paper's metric of a row on a set: mean over seeds, 95% interval, what it covers."""

    value: float
    low: float
    high: float
    seeds: int
    #: benchmarks with a ratio / in the set
    ratios: int
    benchmarks: int
    #: ratios <= 0 left out of the geometric mean, summed over seeds
    nonpositive: int

    def __str__(self) -> str:
        left = f"; {self.nonpositive} ratios <= 0 left out, over the seeds" if self.nonpositive else ""
        runs = f"{self.seeds} seeds" if self.seeds > 1 else "1 run"
        return (f"{self.value:+.1%} [{self.low:+.1%}, {self.high:+.1%}] ({runs}; "
                f"{self.ratios} of {self.benchmarks} with a ratio{left})")


def verdict(cell: Cell, paper: float) -> str:
    """Whether ``cell``'s interval is above, below or around the paper's number."""
    if cell.low > paper:
        return "beaten"
    if cell.high < paper:
        return "below"
    return "not shown"


def against(
    agent: Sequence[Mapping[str, float]], initial: Mapping[str, float], reference: Mapping[str, float],
    benchmarks: Sequence[str], seed: int = 0,
) -> Cell:
    """The paper's metric of ``agent`` (one URI -> op count map per seed) over ``reference`` on ``benchmarks``."""
    if not agent:
        raise ValueError("expected the results of one seed or more, got none")
    with_ratio = [b for b in benchmarks if initial[b] - reference[b] > 0]
    ratios = [{b: (initial[b] - a[b]) / (initial[b] - reference[b]) for b in with_ratio} for a in agent]

    def metric(seeds: Sequence[dict[str, float]], chosen: Sequence[str]) -> float:
        return mean([geomean_improvement([r[b] for b in chosen]) for r in seeds])

    rng = random.Random(seed)
    draws = sorted(
        d for d in (
            metric([rng.choice(ratios) for _ in ratios], [rng.choice(with_ratio) for _ in with_ratio])
            for _ in range(_DRAWS if with_ratio else 0)
        ) if not math.isnan(d)  # a draw of only ratios <= 0 has no geometric mean
    ) or [math.nan]
    return Cell(
        value=metric(ratios, with_ratio), low=draws[int(0.025 * (len(draws) - 1))],
        high=draws[int(0.975 * (len(draws) - 1))], seeds=len(agent), ratios=len(with_ratio),
        benchmarks=len(benchmarks), nonpositive=sum(1 for r in ratios for v in r.values() if v <= 0),
    )


def table(rows: Mapping[str, str], baseline: str = _BASELINE, seed: int = 0) -> list[tuple[str, str, Cell, Cell]]:
    """(row, set, over XLA's default, over the replayed default) for every row and set with a complete seed
    (results on every test benchmark of the set)."""
    from xla_service.env.datasets import split_benchmark_uris

    counts = op_counts()
    initial = {b: float(n0) for b, (n0, _) in counts.items()}
    default = {b: float(nd) for b, (_, nd) in counts.items()}
    replayed = final_op_counts(read_results([baseline]))
    out = []
    for label, pattern in rows.items():
        by_seed: dict[int, dict[str, float]] = {}
        paths = sorted({p for part in pattern.split(",") for p in glob.glob(part)})
        for path in paths:
            by_seed.setdefault(run_of(path, len(paths)), {}).update(
                {s.benchmark: agent_op_count(s, *counts[s.benchmark]) for s in read_results([path])})
        for name, (families, _) in PAPER.items():
            benchmarks = sorted(split_benchmark_uris("test", list(families)))
            complete = [reached for _, reached in sorted(by_seed.items()) if set(benchmarks) <= reached.keys()]
            missing = [b for b in benchmarks if b not in replayed]
            if complete and missing:
                raise LookupError(f"{baseline}: expected the replayed default on every test benchmark, "
                                  f"{missing[0]} is missing")
            if complete:
                out.append((label, name, against(complete, initial, default, benchmarks, seed),
                            against(complete, initial, replayed, benchmarks, seed)))
    return out


def markdown(cells: Sequence[tuple[str, str, Cell, Cell]]) -> list[str]:
    lines = [
        "| agent | set (paper's number) | over XLA's default (as the paper) | verdict "
        "| over the replayed default (stricter) | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for label, name, default, replayed in cells:
        paper = PAPER[name][1]
        lines.append(f"| {label} | {name} ({paper:+.1%}) | {default} | {verdict(default, paper)} "
                     f"| {replayed} | {verdict(replayed, paper)} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("rows", nargs="*", metavar="LABEL=GLOB",
                        help="rows instead of docs/experiments/against-the-paper.md's: a label and globs of its results CSVs (seed<k> in the names)")
    parser.add_argument("--baseline", default=_BASELINE, help="the replayed default pipeline's results on the test split")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    args = parser.parse_args(argv)
    rows = dict(ROWS)
    if args.rows:
        rows = {}
        for item in args.rows:
            label, sep, pattern = item.partition("=")
            if not sep or not label or not pattern:
                parser.error(f"expected LABEL=GLOB, got {item!r}")
            rows[label] = pattern
    try:
        cells = table(rows, args.baseline, args.seed)
    except (ValueError, LookupError, OSError) as e:
        parser.error(str(e))
    if not cells:
        parser.error("no row has a seed with results on every benchmark of a set")
    print("\n".join(markdown(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
