"""How often a seed of one row beats a seed of another: the probability of improvement across seeds.

``python -m leaderboard.improvement --preset gnn "ROW A" "ROW B"``, or with rows of your own:
``python -m leaderboard.improvement --baseline B.csv "A=GLOB" "B=GLOB"`` (rows as in ``leaderboard.seeds``).

``leaderboard.seeds`` compares two rows by the Student-t interval of their mean scores across
seeds, and one failed seed widens that interval for as many seeds as can be afforded. This
compares the seeds themselves. For each column (the families, the test split, the held-out
families), it reports P(A > B) + P(A = B) / 2: the probability that a seed of A scores above a
seed of B, ties counting half, over every pair of their seeds. A seed's score is
``leaderboard.seeds``' (the geometric mean of N_baseline / N_agent over the column). This is the
Mann-Whitney statistic over n_A * n_B, rliable's "probability of improvement" (Agarwal et al.,
2021) taken on each seed's column score; rliable averages per-task values over tasks instead.

0.5 means neither side tends to score higher. Beside it stand each row's median seed score and
seed count. The 95% interval is a percentile bootstrap that resamples each row's seeds apart
(20,000 draws, seeded: the same inputs give the same interval). It is approximate with few seeds,
too narrow rather than too wide, and collapses to a point when every seed of one row is above
every seed of the other. With fewer than 2 seeds on a side there is no interval.
"""
from __future__ import annotations

import argparse
import difflib
import math
import random
import statistics
import sys
from collections.abc import Sequence

from leaderboard.seeds import (
    PRESETS,
    add_baseline_arguments,
    baseline_counts,
    chosen_baselines,
    columns,
    parse_rows,
    seed_scores,
)

__all__ = ["TIE", "improvement_table", "main", "probability_of_improvement", "with_interval"]

#: Two scores closer than this are a tie (seeds that play the same passes score the same).
TIE = 1e-12
_DRAWS = 20_000


def probability_of_improvement(a: Sequence[float], b: Sequence[float]) -> float:
    """P(X > Y) + P(X = Y) / 2 for X a score of ``a`` and Y a score of ``b``, over every pair."""
    if not a or not b:
        raise ValueError(f"expected scores on both sides, got {len(a)} and {len(b)}")
    wins = sum(1.0 if x - y > TIE else 0.5 if abs(x - y) <= TIE else 0.0 for x in a for y in b)
    return wins / (len(a) * len(b))


def with_interval(a: Sequence[float], b: Sequence[float], seed: int = 0) -> tuple[float, float, float]:
    """:func:`probability_of_improvement` and its 95% percentile bootstrap interval (each side's
    seeds resampled apart); NaN bounds if a side has fewer than 2 seeds."""
    value = probability_of_improvement(a, b)
    if len(a) < 2 or len(b) < 2:
        return value, math.nan, math.nan
    rng = random.Random(seed)
    draws = sorted(
        probability_of_improvement(rng.choices(a, k=len(a)), rng.choices(b, k=len(b))) for _ in range(_DRAWS)
    )
    tail = round(0.025 * _DRAWS)  # as many draws below the interval as above it
    return value, draws[tail], draws[_DRAWS - 1 - tail]


def improvement_table(
    a: tuple[str, Sequence[str]], b: tuple[str, Sequence[str]], baseline: dict[str, float]
) -> tuple[list[str], list[str]]:
    """The Markdown table comparing rows ``a`` and ``b`` (label, results files) column by column, and
    notes on what it leaves out: a column where either row has no whole seed, and partial seeds."""
    cols = columns(list(baseline))
    scores = {label: seed_scores(paths, baseline, cols) for label, paths in (a, b)}
    lines = [
        f"A = {a[0]}; B = {b[0]}",
        "",
        "| column | P(A > B) + P(A = B) / 2 | A: median seed (seeds) | B: median seed (seeds) |",
        "|---|---|---|---|",
    ]
    notes = []
    for name in cols:
        column = name.removeprefix("xla-").removesuffix("-v0")
        partial = {label: row[name][1] for label, row in scores.items() if row[name][1]}
        if partial:
            notes.append(f"{column}: seeds with only some of its benchmarks left out: {partial}")
        x, y = scores[a[0]][name][0], scores[b[0]][name][0]
        if not x or not y:
            notes.append(f"{column}: left out, expected whole seeds on both sides, got {len(x)} and {len(y)}")
            continue
        value, low, high = with_interval(x, y)
        interval = "" if math.isnan(low) else f" [{low:.2f}, {high:.2f}]"
        lines.append(
            f"| {column} | {value:.2f}{interval} | {statistics.median(x):.3f}x ({len(x)}) "
            f"| {statistics.median(y):.3f}x ({len(y)}) |"
        )
    return lines, notes


def _row(item: str, preset: dict[str, str], parser: argparse.ArgumentParser) -> str:
    """A row given as LABEL=GLOB, or as the label of a row of the preset (as LABEL=GLOB)."""
    if "=" in item:
        return item
    if not preset:
        parser.error(f"expected LABEL=GLOB (a bare label needs --preset), got {item!r}")
    if item in preset:
        return f"{item}={preset[item]}"
    close = difflib.get_close_matches(item, list(preset), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else f"; the preset's rows: {sorted(preset)}"
    parser.error(f"expected LABEL=GLOB or a row of the preset, got {item!r}{hint}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="Each cell: the probability with its 95% bootstrap interval (20,000 draws), then each row's "
        "median seed score and seed count.",
    )
    parser.add_argument("a", metavar="A", help="row A: LABEL=GLOB[,GLOB...], or the label of a row of --preset")
    parser.add_argument("b", metavar="B", help="row B, the same way")
    add_baseline_arguments(parser, "a table of leaderboard.seeds: its baselines, and its rows by label")
    args = parser.parse_args(argv)
    preset = dict(PRESETS[args.preset].rows) if args.preset else {}
    baselines = chosen_baselines(args)
    if not baselines:
        parser.error("expected --baseline or --preset")
    items = [_row(args.a, preset, parser), _row(args.b, preset, parser)]
    try:
        rows = parse_rows(items)
    except ValueError as error:
        parser.error(str(error))
    if len(rows) != 2:
        parser.error(f"expected two different rows, got {next(iter(rows))!r} twice")
    for item, (label, paths) in zip(items, rows.items()):
        if not paths:
            parser.error(f"row {label!r} matches no results files: expected files for {item.split('=', 1)[1]!r}, got none")
    (label_a, paths_a), (label_b, paths_b) = rows.items()
    try:
        lines, notes = improvement_table((label_a, paths_a), (label_b, paths_b), baseline_counts(baselines))
    except (ValueError, LookupError, OSError) as error:
        parser.error(str(error))
    if len(lines) == 4:
        parser.error(f"expected a column where both rows have whole seeds, got none ({'; '.join(notes)})")
    print("\n".join(lines))
    for note in notes:
        print(note, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
