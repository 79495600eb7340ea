"""How often a seed of one row beats a seed of another: the probability of improvement across seeds.

``python -m leaderboard.report.improvement --preset gnn "ROW A" "ROW B"``, or with rows of your own:
``python -m leaderboard.report.improvement --baseline B.csv "A=GLOB" "B=GLOB"`` (rows as in ``leaderboard.report.seeds``).

``leaderboard.report.seeds`` compares two rows by the Student-t interval of their mean scores across
seeds, and one failed seed widens that interval for as many seeds as can be afforded. This
compares the seeds themselves. For each column (the families, the test split, the held-out
families), it reports P(A > B) + P(A = B) / 2: the probability that a seed of A scores above a
seed of B, ties counting half, over every pair of their seeds. A seed's score is
``leaderboard.report.seeds``' (the geometric mean of N_baseline / N_agent over the column). This is the
Mann-Whitney statistic over n_A * n_B, rliable's "probability of improvement" (Agarwal et al.,
2021) taken on each seed's column score; rliable averages per-task values over tasks instead.

0.5 means neither side tends to score higher. Beside it stand each row's median seed score and
seed count. The 95% interval is a percentile bootstrap that resamples each row's seeds apart
(20,000 draws, seeded: the same inputs give the same interval). It is approximate with few seeds,
too narrow rather than too wide, and collapses to a point when every seed of one row is above
every seed of the other. With fewer than 2 seeds on a side there is no interval.

Beside it stands a one-sided permutation p-value of the same statistic: the share of relabellings
of the pooled seeds (n_A of them as A) that give A a probability of improvement at least as high.
It is exact (every relabelling) up to 200,000 relabellings, i.e. up to 10 seeds a side, and
estimated from 20,000 seeded random relabellings beyond. Its null hypothesis is that both rows'
seeds come from one distribution; a small p rejects that in the direction of A scoring higher (with
unequal spreads, e.g. one failing seed against seeds that agree, it is not a test of
P(A > B) = 0.5). Each column's p stands alone, uncorrected for the others, and the test split and
held-out columns aggregate the family columns. None of this is the goal's test of non-overlapping
intervals of the mean. ``--figure`` draws every seed's score per column beside its row's mean and
95% Student-t interval (as ``leaderboard.report.seeds``).
"""
from __future__ import annotations

import argparse
import difflib
import itertools
import math
import random
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from leaderboard.report.presets import PRESETS
from leaderboard.report.seeds import (
    across_seeds,
    add_baseline_arguments,
    baseline_counts,
    chosen_baselines,
    columns,
    parse_rows,
    seed_scores,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["TIE", "improvement_table", "main", "paired_scores", "permutation_p", "probability_of_improvement", "seed_figure",
           "with_interval"]

#: Two scores closer than this are a tie (seeds that play the same passes score the same).
TIE = 1e-12
_DRAWS = 20_000
#: Up to this many relabellings the permutation test enumerates them all.
_EXACT = 200_000


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


def _midranks(pooled: Sequence[float]) -> list[float]:
    """1-based ranks of ``pooled``, scores within TIE of the previous one sharing their mean rank."""
    order = sorted(range(len(pooled)), key=lambda i: pooled[i])
    ranks = [0.0] * len(pooled)
    start = 0
    for end in range(1, len(order) + 1):
        if end == len(order) or pooled[order[end]] - pooled[order[end - 1]] > TIE:
            for i in order[start:end]:
                ranks[i] = (start + 1 + end) / 2
            start = end
    return ranks


def _enumerable(n_a: int, n_b: int) -> bool:
    """Whether :func:`permutation_p` enumerates every relabelling of ``n_a`` + ``n_b`` seeds."""
    return math.comb(n_a + n_b, n_a) <= _EXACT


def permutation_p(a: Sequence[float], b: Sequence[float], seed: int = 0) -> float:
    """One-sided p-value of :func:`probability_of_improvement` under random relabelling of the pooled
    seeds: the share of relabellings whose A scores at least as high (exact up to ``_EXACT`` of them)."""
    n_a, n_b = len(a), len(b)
    if not n_a or not n_b:
        raise ValueError(f"expected scores on both sides, got {n_a} and {n_b}")
    ranks = _midranks([*a, *b])
    # P(A > B) + P(A = B) / 2 is (rank sum of A - n_a (n_a + 1) / 2) / (n_a n_b): compare rank sums
    observed = sum(ranks[:n_a]) - 1e-9
    if _enumerable(n_a, n_b):
        sums = [sum(ranks[i] for i in chosen) for chosen in itertools.combinations(range(n_a + n_b), n_a)]
        return sum(1 for total in sums if total >= observed) / len(sums)
    rng = random.Random(seed)
    hits = sum(1 for _ in range(_DRAWS) if sum(rng.sample(ranks, n_a)) >= observed)
    return (hits + 1) / (_DRAWS + 1)


def paired_scores(
    a: tuple[str, Sequence[str]], b: tuple[str, Sequence[str]], baseline: dict[str, float]
) -> tuple[dict[str, tuple[list[float], list[float]]], list[str]]:
    """Column -> (A's seed scores, B's), for rows ``a`` and ``b`` (label, results files), and notes on
    what it leaves out: a column where either row has no whole seed, and partial seeds."""
    cols = columns(list(baseline))
    scores = {label: seed_scores(paths, baseline, cols) for label, paths in (a, b)}
    out, notes = {}, []
    for name in cols:
        column = name.removeprefix("xla-").removesuffix("-v0")
        partial = {label: row[name][1] for label, row in scores.items() if row[name][1]}
        if partial:
            notes.append(f"{column}: seeds with only some of its benchmarks left out: {partial}")
        x, y = scores[a[0]][name][0], scores[b[0]][name][0]
        if not x or not y:
            notes.append(f"{column}: left out, expected whole seeds on both sides, got {len(x)} and {len(y)}")
            continue
        out[column] = (x, y)
    return out, notes


def _p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else "< 0.001"


def improvement_table(labels: tuple[str, str], scores: dict[str, tuple[list[float], list[float]]]) -> list[str]:
    """The Markdown table of :func:`paired_scores`' columns, rows ``labels`` (A, B)."""
    lines = [
        f"A = {labels[0]}; B = {labels[1]}",
        "",
        "| column | P(A > B) + P(A = B) / 2 | p (A above B), one-sided | A: median seed (seeds) | B: median seed (seeds) |",
        "|---|---|---|---|---|",
    ]
    for column, (x, y) in scores.items():
        value, low, high = with_interval(x, y)
        interval = "" if math.isnan(low) else f" [{low:.2f}, {high:.2f}]"
        lines.append(
            f"| {column} | {value:.2f}{interval} | {_p(permutation_p(x, y))} | {statistics.median(x):.3f}x ({len(x)}) "
            f"| {statistics.median(y):.3f}x ({len(y)}) |"
        )
    for n_a, n_b in sorted({(len(x), len(y)) for x, y in scores.values()}):
        if not _enumerable(n_a, n_b):  # say which p-values are estimates, and of what
            lines += ["", f"p with {n_a} and {n_b} seeds: estimated from {_DRAWS:,} seeded random relabellings of the "
                      f"{math.comb(n_a + n_b, n_a):,} (every one is enumerated up to {_EXACT:,})"]
    return lines


def seed_figure(labels: tuple[str, str], scores: dict[str, tuple[list[float], list[float]]]) -> Figure:
    """A panel per column, on its own scale: each seed's score of A (left) and B (right) as a dot,
    equal scores spread side by side, and beside each row its mean with the 95% Student-t interval."""
    import matplotlib.pyplot as plt

    from leaderboard.report.figures import COLORS
    figure, axes = plt.subplots(1, len(scores), squeeze=False, figsize=(2.5 + 1.3 * len(scores), 4.2))
    for ax, (column, pair) in zip(axes[0], scores.items()):
        for side, (label, seeds) in enumerate(zip(labels, pair)):
            ties = Counter(round(score, 4) for score in seeds)  # equal to 4 digits: a row of dots
            placed: Counter[float] = Counter()
            xs = []
            for score in seeds:
                key = round(score, 4)
                xs.append(side + 0.3 * (placed[key] - (ties[key] - 1) / 2) / max(ties[key], 1))
                placed[key] += 1
            ax.scatter(xs, seeds, s=12, color=COLORS[side], alpha=0.8, label=label, zorder=3)
            mean, low, high = across_seeds(seeds)
            if not math.isnan(low):
                ax.errorbar([side + 0.3], [mean], yerr=[[mean - low], [high - mean]], fmt="o", markersize=3,
                            color="black", capsize=3, linewidth=1.0, zorder=4)
        ax.axhline(1.0, color="black", linewidth=0.6, linestyle=":")
        ax.set_xlim(-0.5, 1.6)
        ax.set_xticks([0, 1])
        ax.set_xticklabels(["A", "B"], fontsize=7)
        ax.set_title(column, fontsize=8)
        ax.tick_params(axis="y", labelsize=6)
    axes[0][0].set_ylabel("op count ratio N_baseline / N_agent, per seed", fontsize=8)
    handles, names = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, [f"{side}: {name}" for side, name in zip("AB", names)], loc="lower center", ncol=2, fontsize=7)
    figure.suptitle("Seed by seed: dots are seeds; black, the mean and its 95% interval", fontsize=10)
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    return figure


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
        epilog="Each table row: the probability with its 95% bootstrap interval (20,000 draws), the one-sided "
        "permutation p-value of A scoring above B (exact up to 10 seeds a side, else 20,000 random relabellings), "
        "then each row's median seed score and seed count.",
    )
    parser.add_argument("a", metavar="A", help="row A: LABEL=GLOB[,GLOB...], or the label of a row of --preset")
    parser.add_argument("b", metavar="B", help="row B, the same way")
    add_baseline_arguments(parser, "a table of leaderboard.report.seeds: its baselines, and its rows by label")
    parser.add_argument("--figure", default=None, metavar="PNG", help="also draw every seed's score beside each row's mean")
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
        scores, notes = paired_scores((label_a, paths_a), (label_b, paths_b), baseline_counts(baselines))
    except (ValueError, LookupError, OSError) as error:
        parser.error(str(error))
    if not scores:
        parser.error(f"expected a column where both rows have whole seeds, got none ({'; '.join(notes)})")
    print("\n".join(improvement_table((label_a, label_b), scores)))
    for note in notes:
        print(note, file=sys.stderr)
    if args.figure:
        from leaderboard.report.figures import save_figure

        save_figure(seed_figure((label_a, label_b), scores), args.figure)
        print(f"wrote {args.figure}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
