"""How much room the op count leaves: per benchmark, the fewest ops any validated result reached.

``python -m leaderboard.report.headroom [--split test] [--baseline RESULTS.csv] [RESULTS.csv ...]``

Each result is one pass ordering some agent found for a benchmark. The best
of them all, benchmark by benchmark, bounds from below what the best
ordering reaches (the true optimum may be lower still). Its geometric mean
ratio over the baseline (by default the replayed default pipeline,
N_baseline / N_best) says how far above the baseline any single agent could
score with the orderings found so far: a goal above it asks for orderings
that no agent, search or seed has found yet. Printed per family and
overall, each with a 95% bootstrap interval over benchmarks, then the result
files that reach the best on the most benchmarks (ties count for each; on
many benchmarks most agents tie) and on how many of them no other file does.

Without RESULTS: every committed ``leaderboard/agents/**/*-SPLIT.csv`` whose
summary (``RESULTS.summary.json``, ``reproduce.sh summary``) says every
result validated by execution, under today's op count rule. Files without
such a summary are left out, and the count of them is printed.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from leaderboard.report.figures import HERE
from leaderboard.report.metrics import Aggregate, aggregate, geomean
from leaderboard.report.summary import family, final_op_counts, read_results
from xla_service.catalog.schema import OP_COUNT_RULE

__all__ = ["best_op_counts", "headroom", "main", "validated_results"]


def validated_results(root: Path, split: str) -> tuple[list[Path], list[Path]]:
    """(used, left out): the ``*-SPLIT.csv`` files below ``root``, split by whether
    their summary says every result was validated, under today's op count rule."""
    used: list[Path] = []
    left_out: list[Path] = []
    for csv in sorted(root.rglob(f"*-{split}.csv")):
        summary = csv.with_suffix(".summary.json")
        data = json.loads(summary.read_text()) if summary.is_file() else {"rows": [{}]}
        overall = data["rows"][-1]  # summarize's last row: every benchmark
        complete = overall.get("n", 0) > 0 and overall.get("validated") == overall.get("n")
        complete &= data.get("op_count_rule") == OP_COUNT_RULE
        (used if complete else left_out).append(csv)
    return used, left_out


def best_op_counts(paths: Sequence[Path]) -> tuple[dict[str, float], dict[Path, tuple[int, int]]]:
    """Benchmark URI -> the fewest ops any of ``paths`` reached; and per file, on how
    many benchmarks it reaches that best (ties count for each) and on how many alone."""
    counts = {path: final_op_counts(read_results([str(path)])) for path in paths}
    best: dict[str, float] = {}
    for per_file in counts.values():
        for uri, n in per_file.items():
            best[uri] = min(n, best.get(uri, n))
    at_best = {path: {uri for uri, n in per_file.items() if n <= best[uri]} for path, per_file in counts.items()}
    holders = Counter(uri for uris in at_best.values() for uri in uris)
    return best, {path: (len(uris), sum(holders[u] == 1 for u in uris)) for path, uris in at_best.items()}


def headroom(best: dict[str, float], baseline: dict[str, float]) -> dict[str, Aggregate]:
    """Family (and ``overall``) -> the geomean of N_baseline / N_best over the baseline's benchmarks."""
    missing = sorted(set(baseline) - set(best))
    if missing:
        raise LookupError(f"Expected a result for every benchmark of the baseline, got none for {missing[:3]}")
    ratios: dict[str, list[float]] = defaultdict(list)
    for uri, n in baseline.items():
        ratio = n / max(best[uri], 1.0)
        ratios[family(uri)].append(ratio)
        ratios["overall"].append(ratio)
    return {name: aggregate(values, geomean) for name, values in sorted(ratios.items(), key=lambda kv: (kv[0] == "overall", kv[0]))}


def _cell(a: Aggregate) -> str:
    return f"{a.value:.3f}x [{a.low:.3f}, {a.high:.3f}]"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", nargs="*", help="results CSVs (default: every validated *-SPLIT.csv of leaderboard/agents)")
    parser.add_argument("--split", default="test", help="split of the default results files (default: %(default)s)")
    parser.add_argument("--baseline", default=None,
                        help="results CSV the ratios are over (default: agents/default_pipeline/results-SPLIT.csv)")
    parser.add_argument("--top", type=int, default=5, help="result files listed by benchmarks at the best (default: %(default)s)")
    args = parser.parse_intermixed_args(argv)
    baseline_csv = Path(args.baseline or HERE / "agents" / "default_pipeline" / f"results-{args.split}.csv")
    used, left_out = [Path(p) for p in args.results], list[Path]()
    if not used:
        used, left_out = validated_results(HERE / "agents", args.split)
    for path in [baseline_csv, *used]:
        if not path.is_file():
            parser.error(f"No such results file: {path}")
    baseline = final_op_counts(read_results([str(baseline_csv)]))
    best, holders = best_op_counts([baseline_csv, *used])
    rows = headroom(best, baseline)  # the baseline is among the files: no benchmark lacks a best
    print(f"best of {len(set(used) | {baseline_csv})} results files per benchmark"
          + (f" ({len(left_out)} left out: no summary saying all validated under the op count rule)" if left_out else ""))
    print(f"| family | benchmarks | best result over {baseline_csv.parent.name}/{baseline_csv.name} |")
    print("|---|---|---|")
    for name, a in rows.items():
        print(f"| {name} | {a.n} | {_cell(a)} |")
    print(f"\nresults files at the best on the most of the {len(baseline)} benchmarks (alone: no other file reaches it):")
    for path, (n, alone) in sorted(holders.items(), key=lambda kv: (-kv[1][0], -kv[1][1], str(kv[0])))[: args.top]:
        print(f"  {n:4d}  alone on {alone:3d}  {path.relative_to(HERE) if path.is_relative_to(HERE) else path}")
    unique = sorted(((alone, path) for path, (_, alone) in holders.items() if alone), key=lambda x: (-x[0], str(x[1])))
    print(f"alone at the best on {sum(a for a, _ in unique)} benchmarks in all: "
          + (", ".join(f"{path.relative_to(HERE) if path.is_relative_to(HERE) else path} {a}" for a, path in unique) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
