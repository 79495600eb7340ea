"""How often a seed of one row beats a seed of another: the probability of improvement across seeds.

``python -m leaderboard.improvement --preset gnn "ROW A" "ROW B"``, or with rows of your own:
``python -m leaderboard.improvement --baseline B.csv "A=GLOB" "B=GLOB"`` (rows as in ``leaderboard.seeds``).

``leaderboard.seeds`` compares two rows by the Student-t interval of their mean scores across
seeds, and one failed seed widens that interval for as many seeds as can be afforded. This
compares the seeds themselves. For each column (the families, the test split, the held-out
families), it reports the probability that a seed of A scores above a seed of B:
P(X > Y) + P(X = Y) / 2 over every pair of their seeds. That is the Mann-Whitney statistic over
n_A * n_B, the "probability of improvement" of rliable (Agarwal et al., 2021) with one score per
seed.

Each probability has a 95% percentile bootstrap interval. It resamples each row's seeds apart
(2,000 draws, seeded: the same inputs give the same interval). 0.5 is no difference; an interval
above 0.5 says that a seed of A beats a seed of B more often than not. Beside it stand each row's
median seed score and seed count. A seed's score is ``leaderboard.seeds``' (the geometric mean
of N_baseline / N_agent over the column).
"""
from __future__ import annotations

import argparse
import difflib
import random
import statistics
import sys
from collections.abc import Sequence

from leaderboard.seeds import PRESETS, baseline_counts, columns, parse_rows, seed_scores

__all__ = ["TIE", "improvement_table", "main", "probability_of_improvement", "with_interval"]

#: Two scores closer than this are a tie (seeds that play the same passes score the same).
TIE = 1e-12
_DRAWS = 2000


def probability_of_improvement(a: Sequence[float], b: Sequence[float]) -> float:
    """P(X > Y) + P(X = Y) / 2 for X a score of ``a`` and Y a score of ``b``, over every pair."""
    if not a or not b:
        raise ValueError(f"expected scores on both sides, got {len(a)} and {len(b)}")
    wins = sum(1.0 if x - y > TIE else 0.5 if abs(x - y) <= TIE else 0.0 for x in a for y in b)
    return wins / (len(a) * len(b))


def with_interval(a: Sequence[float], b: Sequence[float], seed: int = 0) -> tuple[float, float, float]:
    """:func:`probability_of_improvement` and its 95% percentile bootstrap interval (each side's
    seeds resampled apart)."""
    value = probability_of_improvement(a, b)
    rng = random.Random(seed)
    draws = sorted(
        probability_of_improvement([rng.choice(a) for _ in a], [rng.choice(b) for _ in b]) for _ in range(_DRAWS)
    )
    return value, draws[int(0.025 * (_DRAWS - 1))], draws[int(0.975 * (_DRAWS - 1))]


def improvement_table(a: tuple[str, Sequence[str]], b: tuple[str, Sequence[str]], baseline: dict[str, float]) -> list[str]:
    """The Markdown table comparing rows ``a`` and ``b`` (label, results files) column by column;
    a column where either row has no whole seed is left out."""
    cols = columns(list(baseline))
    scores_a, scores_b = seed_scores(a[1], baseline, cols), seed_scores(b[1], baseline, cols)
    lines = [
        f"A = {a[0]}; B = {b[0]}",
        "",
        "| column | P(a seed of A > a seed of B) | A: median seed (seeds) | B: median seed (seeds) |",
        "|---|---|---|---|",
    ]
    for name in cols:
        x, y = scores_a[name][0], scores_b[name][0]
        if not x or not y:
            continue
        value, low, high = with_interval(x, y)
        column = name.removeprefix("xla-").removesuffix("-v0")
        lines.append(
            f"| {column} | {value:.2f} [{low:.2f}, {high:.2f}] | {statistics.median(x):.3f}x ({len(x)}) "
            f"| {statistics.median(y):.3f}x ({len(y)}) |"
        )
    return lines


def _row(item: str, preset: dict[str, str], parser: argparse.ArgumentParser) -> str:
    """A row given as LABEL=GLOB, or as the label of a row of the preset (as LABEL=GLOB)."""
    if "=" in item:
        return item
    if item in preset:
        return f"{item}={preset[item]}"
    close = difflib.get_close_matches(item, list(preset), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else f"; the preset's rows: {sorted(preset)}"
    parser.error(f"expected LABEL=GLOB or a row of the preset, got {item!r}{hint}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("a", metavar="A", help="row A: LABEL=GLOB[,GLOB...], or the label of a row of --preset")
    parser.add_argument("b", metavar="B", help="row B, the same way")
    parser.add_argument(
        "--baseline", action="append", default=[], metavar="CSV",
        help="results whose op counts are the reference (repeat to merge, e.g. test and held-out)",
    )
    parser.add_argument(
        "--preset", choices=sorted(PRESETS), default=None,
        help="a table of leaderboard.seeds: its baselines, and its rows by label",
    )
    args = parser.parse_args(argv)
    preset = dict(PRESETS[args.preset].rows) if args.preset else {}
    baselines = [*(PRESETS[args.preset].baselines if args.preset else ()), *args.baseline]
    if not baselines:
        parser.error("expected --baseline or --preset")
    try:
        rows = parse_rows([_row(args.a, preset, parser), _row(args.b, preset, parser)])
    except ValueError as error:
        parser.error(str(error))
    if len(rows) != 2:
        parser.error(f"expected two rows with different labels, got {sorted(rows)}")
    for label, paths in rows.items():
        if not paths:
            parser.error(f"row {label!r} matches no results files")
    (label_a, paths_a), (label_b, paths_b) = rows.items()
    print("\n".join(improvement_table((label_a, paths_a), (label_b, paths_b), baseline_counts(baselines))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
