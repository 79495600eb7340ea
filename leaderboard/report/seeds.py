"""Results over training seeds: the mean and 95% interval across seeds, per family.

``python -m leaderboard.report.seeds --baseline B.csv [--baseline B2.csv ...] LABEL=GLOB ...``,
or ``python -m leaderboard.report.seeds --preset NAME`` for a table of the docs (``leaderboard.report.presets``).

One row per ``LABEL=GLOB[,GLOB...]``; the globs match that row's results CSVs, one or
more per training seed (``seed<k>`` in the file name), e.g. a run's test-split
file and its held-out file. A seed's score in a column is the geometric mean,
over the column's benchmarks, of N_baseline / N_agent: the leaderboard's
headline ratio (``leaderboard.report.summary``), against the baselines' op counts
(several baseline files are merged, e.g. the replayed default pipeline on the
test split and on the held-out families). A cell is the mean of its seeds'
scores with a 95% Student-t interval across seeds (two seeds or more) and the
number of seeds: how much another seed would move the row, which the
intervals over benchmarks of ``leaderboard.report.table`` do not say.

Columns: every family of the baselines, then ``test split`` (the training
families' benchmarks) and ``held-out`` (split ``heldout``). A seed that lacks
some of a column's benchmarks (an evaluation still running) is left out of
that column and counted as partial, so every number covers whole columns. The
last column counts the row's results validated by execution (their
``leaderboard.report.summary --validate --json`` files).
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from leaderboard.declared import SeedDeclarationError, check_declared
from leaderboard.report.metrics import geomean, mean
from leaderboard.report.presets import PRESETS
from leaderboard.report.summary import (
    agent_op_count,
    family,
    final_op_counts,
    op_counts,
    read_results,
)

__all__ = ["Cell", "HELDOUT", "MAX_BARS", "TEST", "across_seeds", "add_baseline_arguments", "baseline_counts", "chosen_baselines", "columns", "main", "markdown", "parse_rows", "run_of", "score_table", "seed_of", "seed_scores", "validated"]

TEST = "test split"
HELDOUT = "held-out"
#: ``--figure`` draws a table of more rows than this as a forest plot, not as grouped bars.
MAX_BARS = 6


@dataclass(frozen=True)
class Cell:
    """One row's score in one column: mean over seeds, its 95% interval, coverage."""

    mean: float
    low: float
    high: float
    seeds: int
    partial: int = 0
    #: what a seed's score is of: a training "seed", or a "run" of a search without one
    unit: str = "seed"

    def __str__(self) -> str:
        if not self.seeds:
            return "-" if not self.partial else f"- ({self.partial} partial)"
        interval = "" if math.isnan(self.low) else f" [{self.low:.3f}, {self.high:.3f}]"
        partial = f", +{self.partial} partial" if self.partial else ""
        return f"{self.mean:.3f}x{interval} ({self.seeds} {self.unit}{'s' if self.seeds > 1 else ''}{partial})"


def seed_of(path: str) -> int:
    """``.../six-ppo-seed2-test.csv`` -> 2."""
    found = re.findall(r"seed(\d+)", Path(path).name)
    if not found:
        raise ValueError(f"expected 'seed<k>' in the results file name, got {Path(path).name!r}")
    return int(found[-1])


def _seedless(path: str) -> bool:
    return not re.search(r"seed\d+", Path(path).name)


def run_of(path: str, files: int) -> int:
    """:func:`seed_of`, except that a file without a seed, alone in its row (of ``files``), is a single
    run (a deterministic search)."""
    if files == 1 and _seedless(path):
        return 0
    return seed_of(path)


def across_seeds(scores: Sequence[float]) -> tuple[float, float, float]:
    """Mean and two-sided 95% Student-t interval of per-seed scores (``scipy.stats``; no interval for one)."""
    from scipy import stats

    m = mean(scores)
    if len(scores) < 2:
        return m, math.nan, math.nan
    if len(set(scores)) == 1:  # no spread: scipy's interval is undefined, the scores' is a point
        return m, m, m
    low, high = stats.t.interval(0.95, len(scores) - 1, loc=m, scale=stats.sem(scores))
    return m, float(low), float(high)


def columns(benchmarks: Sequence[str]) -> dict[str, set[str]]:
    """Column -> its benchmarks: the test families, ``TEST``, the held-out families, ``HELDOUT``
    (``"validation split"`` instead of ``TEST`` for benchmarks of the validation split)."""
    from xla_service.env.datasets import split_benchmark_uris

    heldout = set(split_benchmark_uris("heldout"))
    rest = set(benchmarks) - heldout
    overall = "validation split" if rest and rest <= set(split_benchmark_uris("validation")) else TEST
    out: dict[str, set[str]] = {}
    for name, chosen in ((overall, rest), (HELDOUT, set(benchmarks) & heldout)):
        for benchmark in sorted(chosen):
            out.setdefault(family(benchmark), set()).add(benchmark)
        if chosen:
            out[name] = chosen
    return out


def _ratios(paths: Sequence[str], baseline: dict[str, float]) -> dict[str, float]:
    """Benchmark -> N_baseline / N_agent over the results at ``paths``."""
    counts = op_counts()
    out = {}
    for state in read_results(paths):
        if state.benchmark not in baseline:
            raise LookupError(f"{state.benchmark} is in no baseline file: add the baseline of its split")
        out[state.benchmark] = baseline[state.benchmark] / max(agent_op_count(state, *counts[state.benchmark]), 1.0)
    return out


def parse_rows(items: Sequence[str]) -> dict[str, list[str]]:
    """``LABEL=GLOB[,GLOB...]`` items -> label -> the results files they match, sorted."""
    rows: dict[str, list[str]] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"expected LABEL=GLOB, got {item!r}")
        label, pattern = item.split("=", 1)
        rows[label] = sorted({path for part in pattern.split(",") for path in glob.glob(part)})
    return rows


def baseline_counts(paths: Sequence[str]) -> dict[str, float]:
    """Benchmark -> the final op count of the baseline results files at ``paths`` (later files win)."""
    baseline: dict[str, float] = {}
    for path in paths:
        baseline.update(final_op_counts(read_results([path])))
    return baseline


def seed_scores(
    paths: Sequence[str], baseline: dict[str, float], cols: Mapping[str, set[str]] | None = None
) -> dict[str, tuple[list[float], int]]:
    """Column -> (the scores of the seeds that have all its benchmarks, by seed; how many seeds have only
    some), for one row's results files (grouped by seed); ``cols``: :func:`columns` of the baseline."""
    check_declared(paths)  # exactly the seeds declared before the run, whoever reads them (improvement too)
    cols = columns(list(baseline)) if cols is None else cols
    by_seed: dict[int, list[str]] = {}
    for path in paths:
        by_seed.setdefault(run_of(path, len(paths)), []).append(path)
    ratios = [_ratios(files, baseline) for _, files in sorted(by_seed.items())]
    return {
        name: (
            [geomean([r[b] for b in wanted]) for r in ratios if wanted <= r.keys()],
            sum(1 for r in ratios if wanted & r.keys() and not wanted <= r.keys()),
        )
        for name, wanted in cols.items()
    }


def score_table(rows: Mapping[str, Sequence[str]], baseline: dict[str, float]) -> dict[str, dict[str, Cell]]:
    """label -> column -> Cell, for the results files of each label (grouped by seed)."""
    cols = columns(list(baseline))
    table: dict[str, dict[str, Cell]] = {}
    for label, paths in rows.items():
        check_declared(paths, label)  # exactly the seeds declared before the run (leaderboard/PROTOCOL.md)
        unit = "run" if len(paths) == 1 and _seedless(paths[0]) else "seed"
        table[label] = {
            name: Cell(*across_seeds(scores), seeds=len(scores), partial=partial, unit=unit)
            for name, (scores, partial) in seed_scores(paths, baseline, cols).items()
        }
    return table


def validated(paths: Sequence[str]) -> str:
    """"validated/results" over ``paths``, from their ``leaderboard.report.summary --validate --json``
    files; a file without a summary of all its rows counts as not validated."""
    done = total = 0
    for path in paths:
        rows = len(read_results([path]))
        total += rows
        summary = Path(path).with_suffix(".summary.json")
        if summary.is_file():
            overall = json.loads(summary.read_text())["rows"][-1]
            done += overall["validated"] if overall["n"] == rows else 0
    return f"{done}/{total}"


def markdown(table: dict[str, dict[str, Cell]], checks: dict[str, str] | None = None) -> list[str]:
    """The table in Markdown, with a last column of ``checks`` (label -> validated/results) if given."""
    names = list(dict.fromkeys(name for row in table.values() for name in row))
    header = [n.removeprefix("xla-").removesuffix("-v0") for n in names] + (["validated"] if checks else [])
    lines = ["| Trained on | " + " | ".join(header) + " |", "|---|" + "---|" * len(header)]
    for label, row in table.items():
        cells = [str(row[n]) for n in names] + ([checks[label]] if checks else [])
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def _figure(table: dict[str, dict[str, Cell]], path: str, title: str) -> None:
    """Bars with intervals per column, or for more than ``MAX_BARS`` rows a forest plot (``leaderboard.report.forest``)."""
    import matplotlib.pyplot as plt

    from leaderboard.report.figures import bars, save_figure
    from leaderboard.report.forest import forest
    from leaderboard.report.metrics import Aggregate

    aggregates = {
        label: {name: Aggregate(c.mean, c.low, c.high, c.seeds) for name, c in row.items() if c.seeds}
        for label, row in table.items()
        if any(c.seeds for c in row.values())  # a row with no whole seed yet has no bar
    }
    axis = "op count ratio N_baseline / N_agent (mean over seeds, 95% CI)"
    if len(aggregates) > MAX_BARS:
        names = list(dict.fromkeys(name for row in table.values() for name in row))
        figure = forest(aggregates, names, title, axis)
    else:
        figure, ax = plt.subplots(figsize=(11, 5))
        bars(ax, aggregates, title, axis, (TEST, HELDOUT))
        figure.tight_layout()
    save_figure(figure, path)


def add_baseline_arguments(parser: argparse.ArgumentParser, preset_help: str) -> None:
    """``--baseline`` (repeatable) and ``--preset``, as this module and ``leaderboard.report.improvement`` take them."""
    parser.add_argument(
        "--baseline", action="append", default=[], metavar="CSV",
        help="results whose op counts are the reference (repeat to merge, e.g. test and held-out; added to --preset's)",
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default=None, help=preset_help)


def chosen_baselines(args: argparse.Namespace) -> list[str]:
    """The baselines ``add_baseline_arguments``' flags chose: the preset's, then ``--baseline``'s."""
    return [*(PRESETS[args.preset].baselines if args.preset else ()), *args.baseline]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument(
        "rows", nargs="*", metavar="LABEL=GLOB", help="a row: its label and globs of its results CSVs (comma-separated)"
    )
    add_baseline_arguments(
        parser, "a table of the docs (leaderboard/README.md, docs/experiments): its rows, baselines and title (rows and --baseline add to it)"
    )
    parser.add_argument("--figure", default=None, metavar="PNG", help=f"also draw the table: bars with intervals, or for more than {MAX_BARS} rows a forest plot (a panel per column)")
    parser.add_argument("--title", default=None, help="the figure's title (default: the preset's, else 'Across training seeds')")
    args = parser.parse_args(argv)
    baselines, items, title = chosen_baselines(args), list(args.rows), args.title
    if args.preset:
        items = PRESETS[args.preset].items() + items
        title = title or PRESETS[args.preset].title
    if not items or not baselines:
        parser.error("expected rows (LABEL=GLOB) and --baseline, or --preset")
    try:
        rows = parse_rows(items)
    except ValueError as error:
        parser.error(str(error))
    try:
        table = score_table(rows, baseline_counts(baselines))
    except SeedDeclarationError as error:  # seeds other than the declared ones (leaderboard/PROTOCOL.md)
        parser.error(str(error))
    print("\n".join(markdown(table, {label: validated(paths) for label, paths in rows.items()})))
    if args.figure:
        _figure(table, args.figure, title or "Across training seeds")
        print(f"wrote {args.figure}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
