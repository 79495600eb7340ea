"""Summarize a leaderboard results CSV, per test family and overall.

``python -m leaderboard.report.summary RESULTS.csv [--validate [--jobs N]] [--runtime]``

- **vs default (geomean ratio)**: the geometric mean over *every* benchmark of
  N_default / N_agent op count (> 1: fewer ops than XLA's default), bf16
  modules included; **vs baseline (geomean ratio)**, the same against another
  results file (``--baseline``, e.g. the default pipeline replayed through the
  env): the leaderboard's headline. **mean reduction**: the mean of
  (N0 - N_agent) / N0. Each with a 95% bootstrap interval over benchmarks and
  how many it covers (``leaderboard/report/metrics.py``); fewer than 20 benchmarks
  are flagged as too small a sample.
- **improvement**: the paper's metric, the geometric mean over benchmarks of
  (initial - agent) / (initial - default) op count, minus one: the
  improvement in op-count reduction over XLA's default pipeline. Initial and
  default op counts come from the suites' manifests; the agent's from the
  CSV's reward (the ``OpCount`` return, initial - agent), all under the op
  count rule ``schema.OP_COUNT_RULE``, which the JSON records. Benchmarks where the default pipeline removes
  nothing (it adds ops to bf16 modules) have no ratio: they are counted in
  the ``no ratio`` column. Ratios <= 0 are left out of the geometric mean,
  which says so.
- **>= default**: the share of benchmarks where the agent's op count is at
  most the default pipeline's (all benchmarks).
- **validated**: results that passed validation by execution (``--validate``;
  ``--jobs N`` validates with N envs side by side).
- **speedup**: geometric mean of default-module runtime / agent-module runtime
  (``--runtime``; the ``Runtime`` observation, median of its measurements).
- **walltime**: mean seconds per benchmark. **passes**: mean passes applied
  per benchmark (the length of the result's commandline).
- **vs baseline** (``--baseline RESULTS.csv``): the improvement metric against
  another results file's op counts instead of XLA's default, e.g. against the
  default pipeline replayed pass by pass through the env.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Sequence

from compiler_gym.compiler_env_state import CompilerEnvState, CompilerEnvStateReader

from leaderboard.declared import SeedDeclarationError, check_file
from leaderboard.harness import op_counts
from leaderboard.protocol import read_store_record, store_line
from leaderboard.report.check import check_results
from leaderboard.report.metrics import MIN_BENCHMARKS, Aggregate, Row
from xla_service.catalog.schema import OP_COUNT_RULE

__all__ = ["Row", "agent_op_count", "family", "main", "final_op_counts", "op_counts", "read_results", "summarize"]


#: The paper's "mixed set": GPT-2, BERT and ResNet graphs.
PAPER_MIX = "paper mix (gpt2+bert+resnet)"
PAPER_MIX_FAMILIES = ("xla-gpt2-v0", "xla-bert-v0", "xla-resnet-v0")


def family(benchmark: str) -> str:
    """``benchmark://xla-gpt2-v0/name`` -> ``xla-gpt2-v0``."""
    return benchmark.split("://", 1)[-1].split("/", 1)[0]


def agent_op_count(state: CompilerEnvState, initial: int, default: int) -> float:
    """The agent's final op count, from the ``OpCount`` return in the CSV."""
    del default
    return initial - float(state.reward or 0.0)


def read_results(paths: Sequence[str]) -> list[CompilerEnvState]:
    """Every state of the results CSVs at ``paths``, in order."""
    states: list[CompilerEnvState] = []
    for path in paths:
        with CompilerEnvStateReader(open(path)) as reader:
            states.extend(reader)
    return states


def final_op_counts(states: Sequence[CompilerEnvState]) -> dict[str, float]:
    """Benchmark URI -> the op count its result reached (a baseline for ``summarize``)."""
    counts = op_counts()
    return {s.benchmark: agent_op_count(s, *counts[s.benchmark]) for s in states}


def summarize(
    states: Sequence[CompilerEnvState],
    validate: bool = False,
    runtime: bool = False,
    baseline: dict[str, float] | None = None,
    jobs: int = 1,
) -> list[Row]:
    """One row per family, the paper's mixed set (GPT-2, BERT, ResNet), then the overall row.

    ``baseline`` (URI -> op count, e.g. ``final_op_counts`` of another results
    file) adds the same metrics against that baseline instead of XLA's default.
    """
    checks = check_results(states, runtime, jobs) if validate or runtime else {}
    counts = op_counts()
    rows: dict[str, Row] = defaultdict(lambda: Row(""))
    overall = Row("overall")
    mixed = Row(PAPER_MIX)
    for i, state in enumerate(states):
        if state.benchmark not in counts:
            raise LookupError(f"{state.benchmark} is in no suite's manifest")
        initial, default = counts[state.benchmark]
        agent = agent_op_count(state, initial, default)
        name = family(state.benchmark)
        row = rows[name]
        row.name = name
        for r in (row, overall) + ((mixed,) if name in PAPER_MIX_FAMILIES else ()):
            r.default_ratios.append(default / max(agent, 1.0))
            r.reductions.append((initial - agent) / max(initial, 1))
            if initial > default:
                r.ratios.append((initial - agent) / (initial - default))
            else:
                r.no_ratio += 1
            r.as_good.append(agent <= default + 1e-6)
            if baseline is not None:
                if state.benchmark not in baseline:
                    raise LookupError(f"{state.benchmark} is not in the baseline results")
                if initial > baseline[state.benchmark]:
                    r.baseline_ratios.append((initial - agent) / (initial - baseline[state.benchmark]))
                r.baseline_op_ratios.append(baseline[state.benchmark] / max(agent, 1.0))
            r.walltimes.append(state.walltime)
            r.passes.append(len(state.commandline.split()))
            if i in checks:
                valid, speedup = checks[i]
                r.checked += 1
                r.validated += int(valid)
                if speedup:
                    r.speedups.append(speedup)
    return [rows[k] for k in sorted(rows)] + ([mixed] if mixed.count else []) + [overall]


def _ratio(a: Aggregate) -> str:
    if math.isnan(a.value):
        return "-"
    interval = "" if math.isnan(a.low) else f" [{a.low:.3f}, {a.high:.3f}]"
    return f"{a.value:.3f}x{interval}"


def format_table(rows: Sequence[Row], baseline: bool = False) -> str:
    """The metrics covering every benchmark (with 95% intervals), then the paper's."""
    width = max(len(r.name) for r in rows) + 1
    head = f"{'group':<{width}} {'n':>4}  {'vs default (geomean N_def/N)':<30}"
    head += f" {'vs baseline':<30}" if baseline else ""
    lines = [head + f" {'mean reduction':<24}"]
    for r in rows:
        a = r.aggregates()
        reduction = a["mean_reduction"]
        cells = f"{r.name:<{width}} {r.count:>4}  {_ratio(a['vs_default']):<30}"
        cells += f" {_ratio(a['vs_baseline_ratio']):<30}" if baseline else ""
        interval = "" if math.isnan(reduction.low) else f" [{reduction.low:+.1%}, {reduction.high:+.1%}]"
        lines.append(cells + f" {reduction.value:+.1%}{interval}" + ("  (small sample)" if a["vs_default"].small else ""))
    lines.append("")
    lines.append(
        f"{'group':<{width}} {'n':>4} {'no ratio':>8} {'improvement':>12} {'>=default':>10} "
        f"{'validated':>10} {'speedup':>8} {'walltime':>9} {'passes':>7}" + (f" {'vs baseline':>12}" if baseline else "")
    )
    for r in rows:
        validated = f"{r.validated}/{r.checked}" if r.checked else "-"
        speedup = f"{r.speedup:.3f}" if r.speedups else "-"
        left_out = [f"{r.nonpositive} <= 0 left out"] if r.nonpositive else []
        if baseline and r.baseline_nonpositive:
            left_out.append(f"{r.baseline_nonpositive} <= 0 vs baseline left out")
        note = f" ({'; '.join(left_out)})" if left_out else ""
        lines.append(
            f"{r.name:<{width}} {r.count:>4} {r.no_ratio:>8} {r.improvement:>+11.1%} "
            f"{r.at_least_default:>10.0%} {validated:>10} {speedup:>8} "
            f"{r.walltime:>8.1f}s {r.mean_passes:>7.2f}" + (f" {r.vs_baseline:>+11.1%}" if baseline else "") + note
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("results", nargs="+", help="results CSV files")
    parser.add_argument(
        "--validate", action="store_true", help="replay and validate every result by execution"
    )
    parser.add_argument(
        "--runtime",
        action="store_true",
        help="measure the runtime of the agent's and the default pipeline's modules",
    )
    parser.add_argument(
        "--baseline",
        metavar="RESULTS.csv",
        help="also report the improvement over this results file's op counts (e.g. the "
        "default pipeline replayed by the env, agents/default_pipeline/results-*.csv)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows to PATH as JSON")
    parser.add_argument("--jobs", type=int, default=1,
                        help="validate with this many envs side by side (one xla-gym service each; "
                        "1 with --runtime, whose timings need a quiet machine)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs: expected a positive number of envs, got {args.jobs}")
    if args.runtime and args.jobs > 1:
        parser.error(f"--runtime times modules and needs a quiet machine: expected --jobs 1, got {args.jobs}")
    try:  # seeds declared before the run, never extended after (leaderboard/PROTOCOL.md)
        for path in args.results:
            check_file(path)
    except SeedDeclarationError as error:
        parser.error(str(error))
    states = read_results(args.results)
    baseline = final_op_counts(read_results([args.baseline])) if args.baseline else None
    rows = summarize(states, args.validate, args.runtime, baseline, args.jobs)
    print(format_table(rows, baseline=baseline is not None))
    for path in args.results:  # which experience store each evaluation read (leaderboard/PROTOCOL.md)
        print(store_line(path))
    if rows[-1].count < MIN_BENCHMARKS:
        print(
            f"WARNING: {rows[-1].count} benchmarks: too small a sample for these aggregates to mean much "
            f"(see their intervals; {MIN_BENCHMARKS} or more recommended)",
            file=sys.stderr,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "results": list(args.results),
                    "baseline": args.baseline,
                    "op_count_rule": OP_COUNT_RULE,
                    "stores": {path: read_store_record(path) for path in args.results},
                    "rows": [r.to_json() for r in rows],
                },
                f,
                indent=1,
            )
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
