"""``python -m leaderboard.report.backend_headroom``: how far the searches get past XLA's default, per backend task.

A task is a backend reward space (objective x pipeline, ``docs/spaces.md``)
on a set of benchmarks. Its results live in ``--results/<Reward>/*.csv`` (one
CSV per search and split, the harness's format, run with ``--reward
<Reward>``). Per benchmark the best result of any search counts, and the
empty order too (the benchmark as loaded, from the reference). Printed per
task: the geometric mean of ``default / best`` (> 1: the searches beat XLA's
default pipeline) with a 95% bootstrap interval over benchmarks, per family
and overall, and the share of benchmarks where they beat it by more than 1%;
the task with the most headroom is named. Only results that are in every
CSV's validation (``--validated``) are used when given.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from leaderboard.report.backend_reference import DEFAULT_PATH, load_reference
from leaderboard.report.backend_summary import parse_track, scores
from leaderboard.report.metrics import aggregate, geomean
from leaderboard.report.summary import family, read_results

__all__ = ["RESULTS", "best_scores", "main"]

RESULTS = Path(__file__).parents[1] / "results" / "backend"


def best_scores(folder: Path, reference: dict) -> tuple[dict[str, dict[str, float]], int, int]:
    """Task (reward) -> benchmark -> the best ``default / final`` of its validated searches and
    the empty order; and how many results had no verdict, and how many failed validation."""
    out: dict[str, dict[str, float]] = {}
    unchecked = failed = 0
    for task in sorted(p for p in folder.iterdir() if p.is_dir()):
        track = parse_track(task.name)
        best: dict[str, float] = {}
        for csv in sorted(task.glob("*.csv")):
            verdicts_path = csv.with_suffix(".summary.json")
            verdicts = json.loads(verdicts_path.read_text()).get("validated", {}) if verdicts_path.is_file() else {}
            for benchmark, score in scores(read_results([str(csv)]), track, reference).items():
                values = reference[benchmark][track.pipeline]
                empty = values["default"][track.index] / max(values["initial"][track.index], 1e-30)
                if benchmark not in verdicts:
                    unchecked += 1
                elif not verdicts[benchmark]:
                    failed += 1
                    score = empty  # the result does not count; the benchmark as loaded still does
                best[benchmark] = max(best.get(benchmark, empty), score)
        out[task.name] = best
    return out, unchecked, failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of <Reward>/ folders of results CSVs")
    parser.add_argument("--reference", type=Path, default=DEFAULT_PATH, help="leaderboard.report.backend_reference's JSON")
    parser.add_argument("--json", type=Path, default=None, help="also write the per-benchmark best scores here")
    parser.add_argument("--figure", type=Path, default=None, help="also draw the table as a PNG here")
    args = parser.parse_args(argv)
    best, unchecked, failed = best_scores(args.results, load_reference(args.reference))
    if not best:
        raise SystemExit(f"No <Reward>/ folders of results in {args.results}")
    families = sorted({family(b) for scores_ in best.values() for b in scores_})
    print("default / best search result, geomean [95% interval] (benchmarks); beat by > 1%: share")
    print("| task | " + " | ".join(families) + " | all | beat by > 1% |")
    print("|---|" + "---|" * (len(families) + 2))
    overall: dict[str, float] = {}
    for task, values in best.items():
        cells = []
        for name in families:
            group = [v for b, v in values.items() if family(b) == name]
            a = aggregate(group, geomean) if group else None
            cells.append(f"{a.value:.3f}x ({a.n})" if a else "-")
        a = aggregate(list(values.values()), geomean)
        overall[task] = a.value
        share = sum(v > 1.01 for v in values.values()) / len(values)
        print(f"| {task} | " + " | ".join(cells) + f" | {a.value:.3f}x [{a.low:.3f}, {a.high:.3f}] ({a.n}) | {share:.0%} |")
    print(f"\nresults left out for failing validation: {failed}; used without a verdict: {unchecked}")
    top = max(overall, key=lambda t: overall[t])
    print(f"most headroom: {top}, {overall[top]:.3f}x over XLA's default in geomean")
    if args.json:
        args.json.write_text(json.dumps(best, indent=1, sort_keys=True) + "\n")
    if args.figure:
        figure(best, args.figure)
    return 0


def figure(best: dict[str, dict[str, float]], path: Path) -> None:
    """Every benchmark's best score per task (dots), the geomean and its interval (bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from leaderboard.report.figures import save_figure

    tasks = list(best)
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(tasks) + 1.5))
    for y, task in enumerate(tasks):
        values = list(best[task].values())
        a = aggregate(values, geomean)
        ax.errorbar([a.value], [y], xerr=[[a.value - a.low], [a.high - a.value]], fmt="s", color="black", capsize=4)
        ax.scatter(values, [y + 0.2] * len(values), s=12, alpha=0.5)
    ax.axvline(1.0, color="gray", linestyle="--", linewidth=1)
    ax.axvline(1.1, color="green", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(tasks)), tasks)
    ax.set_xscale("log")
    ax.set_xlabel("XLA's default / best search result (> 1: the search beats XLA's default pipeline)")
    ax.set_title("Backend tasks: headroom over XLA's default (squares: geomean, 95% interval; dots: benchmarks)")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
